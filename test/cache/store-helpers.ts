// Test helpers for the cache store: a store in a fresh temp dir with a settable clock, saving and reading whole entries.
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { Readable } from "node:stream";
import type { CacheEntry } from "../../src/workflow/cache-types.js";
import { createDirStore, type DirStore, type DirStoreEvent } from "../../src/cache/dir-store.js";
import { makeTestTempDir } from "../support/temp-dir.js";

export interface TestStore {
  readonly store: DirStore;
  readonly dir: string;
  readonly events: DirStoreEvent[];
  /** The store's clock, epoch ms. */
  time: number;
}

export function makeTestStore(
  maxBytes = Number.POSITIVE_INFINITY,
  dir = join(makeTestTempDir("knotless-cache-"), "store"),
): TestStore {
  const events: DirStoreEvent[] = [];
  const test: TestStore = {
    dir,
    events,
    time: 1_800_000_000_000,
    store: undefined as unknown as DirStore,
  };
  (test as { store: DirStore }).store = createDirStore({
    dir,
    maxBytes,
    now: () => test.time,
    onEvent: (event) => events.push(event),
  });
  return test;
}

/** Saves `content` under `key` (writing it in pieces of `piece` bytes) and returns what commit said. */
export async function saveEntry(
  store: DirStore,
  repo: string,
  key: string,
  content: Buffer,
  piece = 65536,
): Promise<"saved" | "exists"> {
  const writer = await store.beginSave(repo, key, "gzip");
  if (writer === "exists") return "exists";
  for (let at = 0; at < content.length; at += piece) {
    if (!writer.stream.write(content.subarray(at, at + piece)))
      await new Promise((resolve) => writer.stream.once("drain", resolve));
  }
  writer.stream.end();
  return writer.commit();
}

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The entry saved under `key`, by an exact lookup; throws when there is none. */
export async function exactEntry(store: DirStore, repo: string, key: string): Promise<CacheEntry> {
  const found = await store.lookup(repo, { key, restoreKeys: [] });
  if (found.kind !== "exact") throw new Error(`no entry ${key} in ${repo}: ${found.kind}`);
  return found.entry;
}

export function sha256(content: Buffer): string {
  return createHash("sha256").update(content).digest("hex");
}

/** Bytes that differ from one test to the next, so that a mixed-up entry shows. */
export function contentOf(label: string, size: number): Buffer {
  const out = Buffer.alloc(size);
  const seed = createHash("sha256").update(label).digest();
  for (let at = 0; at < size; at += seed.length) seed.copy(out, at, 0, Math.min(seed.length, size - at));
  out.writeUInt32BE(size >>> 0, 0);
  return out;
}
