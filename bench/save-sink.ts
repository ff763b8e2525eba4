// The host's side of a cache save alone, for bench/cache-save-ab.sh: reads an archive on stdin and drops it or stores it.
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createDirStore } from "../src/cache/dir-store.js";

/**
 * `node dist/bench/save-sink.js MODE DIR`: MODE `none` drops the bytes (the cost of node reading kubectl's stdout),
 * `store` saves them as the runner does, through the directory store's writer in DIR (the temp file, sha256, commit).
 */
async function main(): Promise<void> {
  const [mode = "", dir = ""] = process.argv.slice(2);
  if (!["none", "store"].includes(mode) || dir === "")
    throw new Error(`usage: save-sink.js none|store DIR, got ${JSON.stringify(process.argv.slice(2))}`);
  if (mode === "none")
    return pipeline(process.stdin, new Writable({ write: (_chunk, _encoding, callback) => callback() }));
  const store = createDirStore({ dir, maxBytes: Number.POSITIVE_INFINITY });
  const writer = await store.beginSave("bench/ab", `ab-${process.pid}-${Date.now()}`, "zstd");
  if (writer === "exists") throw new Error("the key exists");
  await pipeline(process.stdin, writer.stream);
  await writer.commit("zstd");
}

main().catch((error: unknown) => {
  process.stderr.write(`save-sink: ${(error as Error).message}\n`);
  process.exitCode = 1;
});
