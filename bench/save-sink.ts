// The host's side of a cache save alone, for bench/cache-save-ab.sh: reads an archive on stdin and does one of its parts.
import { createWriteStream } from "node:fs";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createArchiveCheck } from "../src/cache/check-archive.js";
import { WritableTee } from "../src/util/writable-tee.js";

/**
 * `node dist/bench/save-sink.js MODE FILE [ZSTD]`: MODE `none` drops the bytes (the cost of node reading kubectl's
 * stdout), `file` writes them to FILE (a plain fs write stream: not the store's writer, which also hashes), `check` runs the save's archive check (roots /work/deps; with ZSTD, the host's
 * zstd at that path, else fzstd), `filecheck` both through the runner's tee. The check's report goes to stderr.
 */
async function main(): Promise<void> {
  const [mode = "", file = "", zstd] = process.argv.slice(2);
  if (!["none", "file", "check", "filecheck"].includes(mode)) throw new Error(`usage: save-sink.js none|file|check|filecheck FILE [ZSTD], got ${JSON.stringify(mode)}`);
  const targets: Writable[] = [];
  if (mode.includes("file")) targets.push(createWriteStream(file));
  const check = mode.includes("check") ? createArchiveCheck({ roots: ["/work/deps"], ...(zstd ? { hostZstd: zstd } : {}) }) : undefined;
  if (check) targets.push(check.stream);
  if (targets.length === 0) targets.push(new Writable({ write: (_chunk, _encoding, callback) => callback() }));
  await pipeline(process.stdin, new WritableTee(targets));
  if (check) process.stderr.write(`${JSON.stringify(await check.done)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`save-sink: ${(error as Error).message}\n`);
  process.exitCode = 1;
});
