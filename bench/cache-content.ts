// The cache benchmark's dependency packages: a deterministic tree of mixed-size, partly compressible files, packed as one .tgz per package.
import { spawn } from "node:child_process";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** Files per package, as in a dependency tree of many small packages. */
export const FILES_PER_PACKAGE = 20;

/**
 * Ten file sizes, used in turn (file n gets SIZE_CYCLE[n % 10]): from an 800-byte package.json to a 110 kB bundle;
 * they sum to 250,000, so 20,000 files are exactly 500,000,000 bytes and 2,000 files 50,000,000.
 */
export const SIZE_CYCLE = [800, 1500, 3000, 5000, 8000, 12000, 20000, 35000, 55000, 109700] as const;

export interface CacheContentSize {
  readonly label: string;
  readonly files: number;
}

/** Bytes of the tree of `files` files (a multiple of 10). */
export function computeTreeBytes(files: number): number {
  let total = 0;
  for (let n = 0; n < files; n++) total += SIZE_CYCLE[n % SIZE_CYCLE.length] as number;
  return total;
}

/** xorshift32: the same bytes on every machine, much faster than crypto for 250 MB. */
function createRandom(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

const WORDS = [
  "function",
  "return",
  "const",
  "export",
  "import",
  "module",
  "require",
  "undefined",
  "this",
  "value",
  "length",
  "options",
  "callback",
  "prototype",
  "object",
  "string",
  "number",
  "default",
  "async",
  "await",
  "throw",
  "new",
  "Error",
  "if",
  "else",
  "for",
  "while",
  "true",
  "false",
  "null",
];

/** 1 MiB of JavaScript-like text (words, punctuation, newlines): gzip takes it to roughly a quarter. */
function buildTextPool(): Buffer {
  const next = createRandom(1234567);
  const parts: string[] = [];
  let size = 0;
  while (size < 1 << 20) {
    const word = WORDS[next() % WORDS.length] as string;
    const sep = next() % 8 === 0 ? ";\n  " : next() % 3 === 0 ? "(" : " ";
    parts.push(word, sep);
    size += word.length + sep.length;
  }
  return Buffer.from(parts.join("")).subarray(0, 1 << 20);
}

/** File n's bytes: the first half a slice of the text pool, the second half pseudo-random (incompressible), like minified code beside binaries and images. */
function buildFile(n: number, pool: Buffer): Buffer {
  const size = SIZE_CYCLE[n % SIZE_CYCLE.length] as number;
  const out = Buffer.allocUnsafe(size);
  const textBytes = Math.floor(size / 2);
  const offset = (n * 7919) % (pool.length - textBytes);
  pool.copy(out, 0, offset, offset + textBytes);
  const next = createRandom(n + 1);
  let i = textBytes;
  for (; i + 4 <= size; i += 4) out.writeUInt32LE(next(), i);
  for (; i < size; i++) out[i] = next() & 0xff;
  return out;
}

function runShell(script: string, env: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", script], { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", reject);
    child.once("close", (code) =>
      code === 0 ? resolve() : reject(new Error(`sh -c ${script} exited ${code}: ${stderr}`)),
    );
  });
}

/**
 * Writes `files` files as packages pkg-0000.. of FILES_PER_PACKAGE each (lib/, dist/ and a package.json) under a
 * staging dir, then packs each package as `<vendorDir>/pkg-NNNN.tgz` (host GNU tar | gzip -1), as a vendored offline
 * install would have them; the staging tree is removed. Returns the tree's bytes.
 */
export async function writeVendorPackages(vendorDir: string, stagingDir: string, files: number): Promise<number> {
  if (files % FILES_PER_PACKAGE !== 0) throw new Error(`files (${files}) must be a multiple of ${FILES_PER_PACKAGE}`);
  const pool = buildTextPool();
  await mkdir(vendorDir, { recursive: true });
  const packages = files / FILES_PER_PACKAGE;
  const batch: Promise<void>[] = [];
  for (let p = 0; p < packages; p++) {
    const name = `pkg-${String(p).padStart(4, "0")}`;
    const root = join(stagingDir, name);
    await mkdir(join(root, "lib"), { recursive: true });
    await mkdir(join(root, "dist"), { recursive: true });
    for (let f = 0; f < FILES_PER_PACKAGE; f++) {
      const n = p * FILES_PER_PACKAGE + f;
      const rel = f === 0 ? "package.json" : f % 2 === 0 ? `dist/chunk-${f}.js` : `lib/file-${f}.js`;
      await writeFile(join(root, rel), buildFile(n, pool));
    }
    batch.push(
      runShell('tar -cf - -C "$SRC" . | gzip -1 > "$DEST"', { SRC: root, DEST: join(vendorDir, `${name}.tgz`) }).then(
        () => rm(root, { recursive: true, force: true }),
      ),
    );
    if (batch.length >= 4) await Promise.all(batch.splice(0));
  }
  await Promise.all(batch);
  await rm(stagingDir, { recursive: true, force: true });
  return computeTreeBytes(files);
}
