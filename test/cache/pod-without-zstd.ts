// A fake executor whose pod has no zstd, for the host driver's fallback to a plain tar decoded on the host.
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { CacheDecoderMissingError, type CacheSpec } from "../../src/workflow/cache-types.js";
import type { CacheArchive, CacheArchiveGate } from "../../src/executor/cache-archive.js";

/** An executor whose pod has no zstd: it refuses a zstd archive at once and extracts what else reaches it (recorded). */
export function podWithoutZstd() {
  const received: { compression: string; bytes: Buffer }[] = [];
  return {
    received,
    executor: {
      async restoreCache(_spec: CacheSpec, archive: CacheArchive, gate?: CacheArchiveGate): Promise<{ bytes: number }> {
        if (archive.compression === "zstd") {
          archive.stream.destroy();
          throw new CacheDecoderMissingError("zstd");
        }
        const chunks: Buffer[] = [];
        let bytes = 0;
        archive.stream.on("data", (chunk: Buffer) => (bytes += chunk.length));
        await pipeline(
          gate ? archive.stream.pipe(gate.stream) : archive.stream,
          new Writable({ write: (chunk: Buffer, _e, callback) => (chunks.push(chunk), callback()) }),
        );
        await gate?.done;
        received.push({ compression: archive.compression, bytes: Buffer.concat(chunks) });
        return { bytes };
      },
      saveCache: async () => assert.fail("no save here"),
    },
  };
}
