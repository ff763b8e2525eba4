// The host side of a cache save and restore alone, on a saved archive file: the archive check, the store write, the restore gate and the entry read.
import { createReadStream, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createArchiveGate } from "../src/cache/archive-gate.js";
import { createArchiveCheck } from "../src/cache/check-archive.js";
import { createDirStore } from "../src/cache/dir-store.js";
import { findOnPath } from "../src/util/find-on-path.js";

export interface CacheHostParts {
  /**
   * Wall ms and CPU ms (this process and the children it waited for, user + system) of each part, the archive read
   * from a tmpfs file. The check decodes zstd as the CLI does: with zstd from PATH when there is one.
   */
  readonly check: { readonly wallMs: number; readonly cpuMs: number };
  /** A zstd archive's check with fzstd in this process (the runner's way on a host without zstd); absent for gzip. */
  readonly checkInProcess?: { readonly wallMs: number; readonly cpuMs: number };
  readonly storeWrite: { readonly wallMs: number; readonly cpuMs: number };
  readonly entryRead: { readonly wallMs: number; readonly cpuMs: number };
  readonly gate: { readonly wallMs: number; readonly cpuMs: number };
}

/** CPU ms of the children this process has waited for (/proc/self/stat's cutime + cstime; 0 where there is no /proc). */
function childrenCpuMs(): number {
  try {
    const fields = readFileSync("/proc/self/stat", "utf8").replace(/^.*\) /s, "").split(" ");
    // After the command's ")": state is field 3, so cutime (16) and cstime (17) are at 13 and 14; clock ticks of 10 ms.
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return 0;
  }
}

async function measure(run: () => Promise<void>): Promise<{ wallMs: number; cpuMs: number }> {
  const cpu = process.cpuUsage();
  const children = childrenCpuMs();
  const started = process.hrtime.bigint();
  await run();
  const used = process.cpuUsage(cpu);
  return { wallMs: Number(process.hrtime.bigint() - started) / 1e6, cpuMs: (used.user + used.system) / 1000 + childrenCpuMs() - children };
}

function discard(): Writable {
  return new Writable({ write: (_chunk, _encoding, callback) => callback() });
}

/** Each host-side part of the runner's cache path, one at a time, over `archive` (a gzip or zstd tar of `root`). */
export async function measureCacheHostParts(archive: string, storeDir: string, root: string, compression: "gzip" | "zstd" = "gzip"): Promise<CacheHostParts> {
  const checkWith = (hostZstd: string | undefined) =>
    measure(async () => {
      const c = createArchiveCheck({ roots: [root], ...(hostZstd === undefined ? {} : { hostZstd }) });
      await pipeline(createReadStream(archive), c.stream);
      await c.done;
    });
  const check = await checkWith(compression === "zstd" ? findOnPath("zstd", process.env.PATH) : undefined);
  const checkInProcess = compression === "zstd" ? await checkWith(undefined) : undefined;
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
  return { check, ...(checkInProcess === undefined ? {} : { checkInProcess }), storeWrite, entryRead, gate };
}
