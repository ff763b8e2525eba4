// The host store's driver: a zstd entry restored into a pod without zstd goes again, decompressed on this host, through the same gate.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { createArchiveGate } from "../../src/cache/archive-gate.js";
import type { CacheSpec } from "../../src/cache/cache-types.js";
import { createHostCacheDriver } from "../../src/cache/host-cache-driver.js";
import { buildArchive } from "../transfer/tree-helpers.js";
import { MemoryCacheStore } from "./memory-store.js";
import { podWithoutZstd } from "./pod-without-zstd.js";

const HAVE_ZSTD = spawnSync("zstd", ["--version"]).status === 0;
const SPEC: CacheSpec = { key: "deps-1", restoreKeys: [], paths: ["/work/deps"] };

describe("restoring from the host store into a pod without zstd", { skip: HAVE_ZSTD ? false : "no zstd on this host" }, () => {
  it("sends the zstd entry again as the plain tar it decodes to, checked by the gate, says so, and reports the stored bytes", async () => {
    const tar = await buildArchive([{ header: { name: "work/deps/a", type: "file", mode: 0o644 }, content: randomBytes(200_000) }]);
    const zstd = spawnSync("zstd", ["-1", "-q", "-c"], { input: tar }).stdout;
    const store = new MemoryCacheStore();
    store.put("r", SPEC.key, zstd, 1, "zstd");
    const pod = podWithoutZstd();
    const gates: string[] = [];
    const told: string[] = [];
    const driver = createHostCacheDriver({
      store,
      repo: "r",
      executor: pod.executor,
      createCheck: () => assert.fail("no save here"),
      createGate: (spec, compression, output) => (gates.push(`${compression} ${output}`), createArchiveGate(compression, { roots: spec.paths, output })),
      description: "memory",
      inform: (message) => told.push(message),
    });
    assert.deepEqual(await driver.restore(SPEC), { kind: "exact", restoredKey: SPEC.key, bytes: zstd.length });
    assert.deepEqual(gates, ["zstd archive", "zstd tar"]);
    assert.equal(told.length, 1);
    assert.match(told[0]!, /the image has no zstd; the entry .* is decoded on this host and sent as a plain tar/);
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
