// The gate on the way into the pod: checked bytes pass, a refused member stops the stream before its header gets through.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { spawnSync } from "node:child_process";
import { constants, gunzipSync, gzipSync } from "node:zlib";
import { createArchiveGate } from "../../src/cache/archive-gate.js";
import { CacheArchiveError } from "../../src/cache/archive-checker.js";
import type { CacheCompression } from "../../src/workflow/cache-types.js";
import { buildArchive, type ArchiveEntry } from "../transfer/tree-helpers.js";

const ROOTS = ["/work/node_modules"];
const file = (name: string, content: string | Buffer): ArchiveEntry => ({
  header: { name, type: "file", mode: 0o644 },
  content,
});

/** Pipes `archive` through a gate in pieces of `piece` bytes; returns what came out and how it ended. */
async function passThroughGate(
  archive: Buffer,
  compression: CacheCompression,
  piece = 64 * 1024,
  output: "archive" | "tar" = "archive",
): Promise<{ output: Buffer; error?: unknown }> {
  const gate = createArchiveGate(compression, { roots: ROOTS, output });
  const pieces: Buffer[] = [];
  for (let at = 0; at < archive.length; at += piece) pieces.push(archive.subarray(at, at + piece));
  const out: Buffer[] = [];
  const sink = new Writable({ write: (chunk: Buffer, _encoding, callback) => (out.push(chunk), callback()) });
  try {
    await pipeline(Readable.from(pieces), gate.stream, sink);
    await gate.done;
    return { output: Buffer.concat(out) };
  } catch (error) {
    await assert.rejects(gate.done);
    return { output: Buffer.concat(out), error };
  }
}

/** What a tar in the pod could decode from the bytes it got: as much of the gzip stream as inflates. */
function decodable(output: Buffer, compression: CacheCompression): Buffer {
  if (compression === "none" || output.length === 0) return output;
  // zstd -d writes out what it decoded before it finds the stream cut.
  if (compression === "zstd") return spawnSync("zstd", ["-dc"], { input: output, maxBuffer: 64 * 1024 * 1024 }).stdout;
  return gunzipSync(output, { finishFlush: constants.Z_SYNC_FLUSH });
}

const HAVE_ZSTD = spawnSync("zstd", ["--version"]).status === 0;

function compress(tar: Buffer, compression: CacheCompression): Buffer {
  if (compression === "gzip") return gzipSync(tar);
  if (compression === "zstd")
    return spawnSync("zstd", ["-1", "-q", "-c"], { input: tar, maxBuffer: 64 * 1024 * 1024 }).stdout;
  return tar;
}

describe("the cache archive gate", () => {
  for (const compression of ["gzip", "zstd", "none"] as const) {
    const skip = compression === "zstd" && !HAVE_ZSTD ? "no zstd on this host" : false;
    it(`passes a good ${compression} archive through unchanged, byte for byte`, { skip }, async () => {
      const tar = await buildArchive([
        file("work/node_modules/a", randomBytes(300_000)),
        file("work/node_modules/b", "b"),
      ]);
      const archive = compress(tar, compression);
      const { output, error } = await passThroughGate(archive, compression, 1000);
      assert.equal(error, undefined);
      assert.ok(output.equals(archive));
    });

    it(
      `stops a ${compression} archive at a refused member: the pod never gets that member's header`,
      { skip },
      async () => {
        const tar = await buildArchive([
          file("work/node_modules/a", randomBytes(1024 * 1024)),
          file("etc/cron.d/evil", "* * * * * root sh /tmp/x\n"),
          file("work/node_modules/z", randomBytes(1024 * 1024)),
        ]);
        const archive = compress(tar, compression);
        const { output, error } = await passThroughGate(archive, compression);
        assert.ok(
          error instanceof CacheArchiveError &&
            /"etc\/cron.d\/evil" is refused: outside the cache's paths/.test(error.message),
          String(error),
        );
        assert.ok(output.length > 0, "nothing passed before the refused member");
        const seen = decodable(output, compression);
        // The refused member's header block starts right after the first member's 1 MiB body.
        assert.ok(
          seen.length < 512 + 1024 * 1024 + 512,
          `the pod could decode ${seen.length} bytes, the refused header's included`,
        );
        assert.equal(seen.includes(Buffer.from("etc/cron.d/evil")), false);
      },
    );
  }

  describe("a zstd entry", { skip: HAVE_ZSTD ? false : "no zstd on this host" }, () => {
    it("is decoded to its plain tar for a pod without zstd, byte for byte", async () => {
      const tar = await buildArchive([
        file("work/node_modules/a", randomBytes(300_000)),
        file("work/node_modules/b", "b".repeat(500_000)),
      ]);
      for (const piece of [1000, 64 * 1024]) {
        const { output, error } = await passThroughGate(compress(tar, "zstd"), "zstd", piece, "tar");
        assert.equal(error, undefined);
        assert.ok(output.equals(tar), `pieces of ${piece}: ${output.length} bytes out of ${tar.length}`);
      }
    });

    it("decoded, stops at a refused member before its header", async () => {
      const tar = await buildArchive([
        file("work/node_modules/a", randomBytes(1024 * 1024)),
        file("etc/cron.d/evil", "x\n"),
        file("work/node_modules/z", randomBytes(1024 * 1024)),
      ]);
      const { output, error } = await passThroughGate(compress(tar, "zstd"), "zstd", 64 * 1024, "tar");
      assert.ok(
        error instanceof CacheArchiveError && /"etc\/cron.d\/evil" is refused/.test(error.message),
        String(error),
      );
      assert.equal(output.includes(Buffer.from("etc/cron.d/evil")), false);
    });

    it("is refused when its bytes are not the compression the entry records", async () => {
      const tar = await buildArchive([file("work/node_modules/a", "a")]);
      const asGzip = await passThroughGate(compress(tar, "gzip"), "zstd");
      assert.ok(
        asGzip.error instanceof CacheArchiveError &&
          /the stored entry says zstd, but its bytes are gzip/.test(asGzip.error.message),
        String(asGzip.error),
      );
      assert.equal(asGzip.output.length, 0);
      const plain = await passThroughGate(tar, "gzip");
      assert.match(String(plain.error), /the stored entry says gzip, but it starts with 776f726b/);
    });
  });

  it("holds back the last chunk of a truncated archive and errors instead", async () => {
    const tar = await buildArchive([file("work/node_modules/a", "x".repeat(200_000))]);
    const cut = tar.subarray(0, 150_000);
    const { output, error } = await passThroughGate(cut, "none", 10_000);
    assert.ok(error instanceof CacheArchiveError && /truncated after 1 entries/.test(error.message), String(error));
    assert.equal(output.length, 140_000);
  });
});
