// The host store's driver: a zstd entry restored into a pod without zstd goes again, decompressed on this host, through
// the same gate; an entry the gate refuses is removed; a save stores what the pod packed.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { createArchiveGate } from "../../src/cache/archive-gate.js";
import type { CacheSpec } from "../../src/workflow/cache-types.js";
import { createHostCacheDriver } from "../../src/cache/host-cache-driver.js";
import { CacheTransferError } from "../../src/executor/cache-archive.js";
import { buildArchive } from "../transfer/tree-helpers.js";
import { MemoryCacheStore } from "./memory-store.js";
import { podWithoutZstd } from "./pod-without-zstd.js";

const HAVE_ZSTD = spawnSync("zstd", ["--version"]).status === 0;
const SPEC: CacheSpec = { key: "deps-1", restoreKeys: [], paths: ["/work/deps"] };

describe(
  "restoring from the host store into a pod without zstd",
  { skip: HAVE_ZSTD ? false : "no zstd on this host" },
  () => {
    it("sends the zstd entry again as the plain tar it decodes to, checked by the gate, says so, and reports the stored bytes", async () => {
      const tar = await buildArchive([
        { header: { name: "work/deps/a", type: "file", mode: 0o644 }, content: randomBytes(200_000) },
      ]);
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
        createGate: (spec, compression, output) => (
          gates.push(`${compression} ${output}`),
          createArchiveGate(compression, { roots: spec.paths, output })
        ),
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
      const driver = createHostCacheDriver({
        store,
        repo: "r",
        executor: pod.executor,
        createGate: (spec, compression, output) => createArchiveGate(compression, { roots: spec.paths, output }),
        description: "memory",
      });
      await assert.rejects(driver.restore(SPEC), /"etc\/cron.d\/evil" is refused/);
      assert.equal(pod.received.length, 0);
    });
  },
);

describe("restoring an entry the gate refuses", () => {
  /** A driver whose executor fails every restore with `error`, after reading the entry (as a cut pod stream would). */
  function driverFailingWith(store: MemoryCacheStore, error: Error) {
    return createHostCacheDriver({
      store,
      repo: "r",
      executor: {
        restoreCache: async (_spec, archive) => {
          archive.stream.resume();
          throw error;
        },
        saveCache: async () => assert.fail("no save here"),
      },
      createGate: (spec, compression, output) => createArchiveGate(compression, { roots: spec.paths, output }),
      description: "memory",
    });
  }

  it("removes the entry, so that its key can be saved again, and says so", async () => {
    const store = new MemoryCacheStore();
    store.put("r", SPEC.key, Buffer.from("an archive the gate refused"));
    const refused = new CacheTransferError(
      'the stored entry was refused on this host: member "etc/passwd" is refused',
      "refused",
    );
    await assert.rejects(driverFailingWith(store, refused).restore(SPEC), (error: unknown) => {
      assert.ok(error instanceof CacheTransferError);
      assert.equal(error.entryFault, "refused");
      assert.match(error.message, /"etc\/passwd" is refused; the entry was removed from the store$/);
      return true;
    });
    assert.equal(store.get("r", SPEC.key), undefined);
    assert.deepEqual(store.calls, ["lookup r deps-1", "openRead r deps-1", "remove r deps-1"]);
  });

  it("keeps an entry the gate refused when a fallback prefix found it: it may be another cache's, refused only for this one's paths", async () => {
    const store = new MemoryCacheStore();
    store.put("r", "deps-0", Buffer.from("another cache's archive"));
    const refused = new CacheTransferError(
      'the stored entry was refused on this host: member "root/.npm/x" is refused: outside the cache\'s paths',
      "refused",
    );
    await assert.rejects(
      driverFailingWith(store, refused).restore({ ...SPEC, restoreKeys: ["deps-"] }),
      /outside the cache's paths; the entry, deps-0's, was kept \(restored here by a fallback prefix\)$/,
    );
    assert.ok(store.get("r", "deps-0")?.equals(Buffer.from("another cache's archive")));
    assert.equal(store.calls.filter((call) => call.startsWith("remove")).length, 0);
  });

  it("keeps an entry whose restore failed for any other reason (a cut exec, a pod that could not write)", async () => {
    const store = new MemoryCacheStore();
    store.put("r", SPEC.key, Buffer.from("a sound archive"));
    for (const error of [
      new CacheTransferError("the pod could not extract the archive"),
      new Error("kubectl exec failed"),
    ]) {
      await assert.rejects(driverFailingWith(store, error).restore(SPEC), (thrown: unknown) => thrown === error);
    }
    assert.ok(store.get("r", SPEC.key)?.equals(Buffer.from("a sound archive")));
    assert.equal(store.calls.filter((call) => call.startsWith("remove")).length, 0);
  });
});

describe("saving into the host store", () => {
  it("hands the executor the store's writer and reports what it stored", async () => {
    const store = new MemoryCacheStore();
    const driver = createHostCacheDriver({
      store,
      repo: "r",
      executor: {
        restoreCache: async () => assert.fail("no restore here"),
        saveCache: async (_spec, writer) => {
          writer.stream.end(Buffer.from("\x28\xb5\x2f\xfd packed in the pod", "latin1"));
          return { status: await writer.commit("zstd"), bytes: 22, missing: [] };
        },
      },
      createGate: () => assert.fail("no restore here"),
      description: "memory",
    });
    assert.deepEqual(await driver.save(SPEC), { status: "saved", bytes: 22 });
    assert.equal(store.get("r", SPEC.key)?.length, 22);
    assert.deepEqual(await driver.save(SPEC), { status: "exists", bytes: 0 });
  });
});
