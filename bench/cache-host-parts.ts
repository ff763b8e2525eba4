// The host side of a cache save and restore alone, on a saved archive file: the store write, the entry read and the restore gate.
import { createReadStream } from "node:fs";
import { rm } from "node:fs/promises";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createArchiveGate } from "../src/cache/archive-gate.js";
import { createDirStore } from "../src/cache/dir-store.js";

export interface CacheHostParts {
  /** Wall ms and CPU ms (this process, user + system) of each part, the archive read from a tmpfs file. */
  readonly storeWrite: { readonly wallMs: number; readonly cpuMs: number };
  readonly entryRead: { readonly wallMs: number; readonly cpuMs: number };
  readonly gate: { readonly wallMs: number; readonly cpuMs: number };
}

async function measure(run: () => Promise<void>): Promise<{ wallMs: number; cpuMs: number }> {
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  await run();
  const used = process.cpuUsage(cpu);
  return { wallMs: Number(process.hrtime.bigint() - started) / 1e6, cpuMs: (used.user + used.system) / 1000 };
}

function discard(): Writable {
  return new Writable({ write: (_chunk, _encoding, callback) => callback() });
}

/** Each host-side part of the runner's cache path, one at a time, over `archive` (a gzip or zstd tar of `root`). */
export async function measureCacheHostParts(
  archive: string,
  storeDir: string,
  root: string,
  compression: "gzip" | "zstd" = "gzip",
): Promise<CacheHostParts> {
  const store = createDirStore({ dir: storeDir, maxBytes: Infinity });
  const storeWrite = await measure(async () => {
    const writer = await store.beginSave("bench/parts", "parts", compression);
    if (writer === "exists") throw new Error("the parts store already held the key");
    await pipeline(createReadStream(archive), writer.stream);
    await writer.commit();
  });
  const found = await store.lookup("bench/parts", { key: "parts", restoreKeys: [] });
  if (found.kind === "miss") throw new Error("the parts store lost its entry");
  const entryRead = await measure(() => pipeline(store.openRead(found.entry), discard()));
  const gate = await measure(async () => {
    const g = createArchiveGate(compression, { roots: [root] });
    await pipeline(createReadStream(archive), g.stream, discard());
    await g.done;
  });
  await rm(storeDir, { recursive: true, force: true });
  return { storeWrite, entryRead, gate };
}
