// Generates a deterministic checkout of a given size and file count once, and reuses it from a cache dir.
import { mkdir, open, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";

export interface CheckoutSpec {
  readonly bytes: number;
  readonly files: number;
}

export interface GeneratedCheckout {
  readonly dir: string;
  readonly bytes: number;
  readonly files: number;
  readonly dirs: number;
  /** True when it was found in the cache instead of generated now. */
  readonly cached: boolean;
  readonly generateMs: number;
}

/** One file of the plan: its path relative to the checkout, its size and where its content starts in the pool. */
interface PlannedFile {
  readonly path: string;
  readonly size: number;
  readonly poolOffset: number;
}

const POOL_BYTES = 4 * 1024 * 1024;
const WRITE_CONCURRENCY = 16;

/** mulberry32: a small seeded PRNG, so every run generates the same bytes. */
function createRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** 4 MiB of deterministic, incompressible bytes every file takes its content from. */
export function buildContentPool(): Buffer {
  const random = createRandom(0x6b6e6f74);
  const words = new Uint32Array(POOL_BYTES / 4);
  for (let i = 0; i < words.length; i++) words[i] = Math.floor(random() * 4294967296);
  return Buffer.from(words.buffer);
}

/**
 * The files of a checkout: about half the bytes in a few large blobs (one per 1,250 files), the rest spread over
 * small files of 0 to 2x the average size, nested three levels deep (src/mNN/pNN/fNNNNN.txt), summing to exactly
 * spec.bytes.
 */
export function planCheckoutFiles(spec: CheckoutSpec): PlannedFile[] {
  const random = createRandom(spec.files ^ 0x5eed);
  const bigCount = Math.max(1, Math.round(spec.files / 1250));
  const smallCount = spec.files - bigCount;
  const bigBytes = Math.floor(spec.bytes / 2 / bigCount);
  let smallBudget = spec.bytes - bigBytes * bigCount;
  const average = smallBudget / Math.max(1, smallCount);
  const plan: PlannedFile[] = [];
  for (let i = 0; i < smallCount; i++) {
    const left = smallCount - i;
    const size = left === 1 ? smallBudget : Math.max(0, Math.min(smallBudget, Math.floor(random() * 2 * average)));
    smallBudget -= size;
    const module = String(Math.floor(i / 1000)).padStart(2, "0");
    const part = String(Math.floor(i / 50) % 20).padStart(2, "0");
    plan.push({
      path: join("src", `m${module}`, `p${part}`, `f${String(i).padStart(5, "0")}.txt`),
      size,
      poolOffset: Math.floor(random() * POOL_BYTES),
    });
  }
  for (let i = 0; i < bigCount; i++) {
    plan.push({
      path: join("assets", `blob${String(i).padStart(3, "0")}.bin`),
      size: bigBytes,
      poolOffset: Math.floor(random() * POOL_BYTES),
    });
  }
  return plan;
}

async function writePlannedFile(root: string, pool: Buffer, file: PlannedFile): Promise<void> {
  const handle = await open(join(root, file.path), "w", 0o644);
  try {
    let written = 0;
    let offset = file.poolOffset;
    while (written < file.size) {
      const length = Math.min(file.size - written, POOL_BYTES - offset);
      await handle.write(pool, offset, length);
      written += length;
      offset = 0;
    }
  } finally {
    await handle.close();
  }
}

function describeSpec(spec: CheckoutSpec): string {
  return JSON.stringify({ version: 1, bytes: spec.bytes, files: spec.files });
}

/** Returns the cached checkout for spec, generating it first if the cache has no complete one. */
export async function ensureCheckout(cacheDir: string, spec: CheckoutSpec): Promise<GeneratedCheckout> {
  const root = join(cacheDir, `checkout-${spec.files}-files-${spec.bytes}-bytes`);
  const plan = planCheckoutFiles(spec);
  const dirs = new Set(
    plan.flatMap((f) => {
      const parts = f.path.split("/").slice(0, -1);
      return parts.map((_, i) => parts.slice(0, i + 1).join("/"));
    }),
  );
  const started = Date.now();
  const markerPath = `${root}.complete.json`;
  const marker = await readFile(markerPath, "utf8").catch(() => undefined);
  if (marker === describeSpec(spec))
    return { dir: root, bytes: spec.bytes, files: spec.files, dirs: dirs.size, cached: true, generateMs: 0 };
  await rm(markerPath, { force: true });
  await rm(root, { recursive: true, force: true });
  for (const dir of [...dirs].sort()) await mkdir(join(root, dir), { recursive: true });
  const pool = buildContentPool();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < plan.length) await writePlannedFile(root, pool, plan[next++] as PlannedFile);
  };
  await Promise.all(Array.from({ length: WRITE_CONCURRENCY }, worker));
  // The marker sits beside the tree (not in it, so it is not uploaded): written last, it says the tree is complete.
  await writeFile(markerPath, describeSpec(spec));
  return {
    dir: root,
    bytes: spec.bytes,
    files: spec.files,
    dirs: dirs.size,
    cached: false,
    generateMs: Date.now() - started,
  };
}
