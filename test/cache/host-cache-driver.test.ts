// The host store's driver: a zstd entry restored into a pod without zstd goes again, decompressed on this host, through the same gate.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { describe, it } from "node:test";
import { createArchiveGate } from "../../src/cache/archive-gate.js";
import { CacheDecoderMissingError, type CacheSpec } from "../../src/cache/cache-types.js";
import { createHostCacheDriver } from "../../src/cache/host-cache-driver.js";
import type { CacheArchive, CacheArchiveGate } from "../../src/executor/cache-transfer.js";
import { buildArchive } from "../transfer/tree-helpers.js";
import { MemoryCacheStore } from "./memory-store.js";

const HAVE_ZSTD = spawnSync("zstd", ["--version"]).status === 0;
const SPEC: CacheSpec = { key: "deps-1", restoreKeys: [], paths: ["/work/deps"] };

/** An executor whose pod has no zstd: it refuses a zstd archive at once and extracts what else reaches it (recorded). */
function podWithoutZstd() {
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
        await pipeline(gate ? archive.stream.pipe(gate.stream) : archive.stream, new Writable({ write: (chunk: Buffer, _e, callback) => (chunks.push(chunk), callback()) }));
        await gate?.done;
        received.push({ compression: archive.compression, bytes: Buffer.concat(chunks) });
        return { bytes };
      },
      saveCache: async () => assert.fail("no save here"),
    },
  };
}

describe("restoring from the host store into a pod without zstd", { skip: HAVE_ZSTD ? false : "no zstd on this host" }, () => {
  it("sends the zstd entry again as the plain tar it decodes to, checked by the gate, and reports the stored bytes", async () => {
    const tar = await buildArchive([{ header: { name: "work/deps/a", type: "file", mode: 0o644 }, content: randomBytes(200_000) }]);
    const zstd = spawnSync("zstd", ["-1", "-q", "-c"], { input: tar }).stdout;
    const store = new MemoryCacheStore();
    store.put("r", SPEC.key, zstd, 1, "zstd");
    const pod = podWithoutZstd();
    const gates: string[] = [];
    const driver = createHostCacheDriver({
      store,
      repo: "r",
      executor: pod.executor,
      createCheck: () => assert.fail("no save here"),
      createGate: (spec, compression, output) => (gates.push(`${compression} ${output}`), createArchiveGate(compression, { roots: spec.paths, output })),
      description: "memory",
    });
    assert.deepEqual(await driver.restore(SPEC), { kind: "exact", restoredKey: SPEC.key, bytes: zstd.length });
    assert.deepEqual(gates, ["zstd archive", "zstd tar"]);
    assert.equal(pod.received.length, 1);
    assert.equal(pod.received[0]!.compression, "none");
    assert.ok(pod.received[0]!.bytes.equals(tar), "the pod did not get the entry's plain tar");
  });

  it("refuses a hostile member of the decoded entry too, and the pod never gets its header", async () => {
    const tar = await buildArchive([
      { header: { name: "work/deps/a", type: "file", mode: 0o644 }, content: "a" },
      { header: { name: "etc/cron.d/evil", type: "file", mode: 0o644 }, content: "x" },
    ]);
    const store = new MemoryCacheStore();
    store.put("r", SPEC.key, spawnSync("zstd", ["-1", "-q", "-c"], { input: tar }).stdout, 1, "zstd");
    const pod = podWithoutZstd();
    const driver = createHostCacheDriver({ store, repo: "r", executor: pod.executor, createCheck: () => assert.fail(), createGate: (spec, compression, output) => createArchiveGate(compression, { roots: spec.paths, output }), description: "memory" });
    await assert.rejects(driver.restore(SPEC), /"etc\/cron.d\/evil" is refused/);
    assert.equal(pod.received.length, 0);
  });
});
