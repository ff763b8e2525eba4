// The PVC backend's restore and save of one cache, run for real in sandbox pods that share one claim: a miss, then a hit in a later pod.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { CacheSpec } from "../../src/cache/cache-types.js";
import { formatPvcNonce, restorePvcCache, savePvcCache, type PodExec } from "../../src/cache/pvc-cache.js";
import { hashCacheName } from "../../src/cache/pvc-layout.js";
import { CACHE_FLAVOURS, createCachePod, HAS_BWRAP } from "./pvc-sandbox.js";

const options = { repo: "did:plc:abc/knot", maxBytes: 1 << 30, nonce: "run-1", now: Date.now };
const spec: CacheSpec = { key: "npm-abc", restoreKeys: ["npm-"], paths: ["/work/node_modules"] };

describe("formatPvcNonce", () => {
  it("makes any run id a safe temporary-name part", () => {
    assert.equal(formatPvcNonce("Some.Run/ID 1"), "Some-Run-ID-1");
    assert.equal(formatPvcNonce(""), "run");
    assert.equal(formatPvcNonce("x".repeat(100)).length, 64);
  });
});

describe("restorePvcCache and savePvcCache against scripted output", () => {
  it("report a cut exec as a failed restore, never a throw", async () => {
    const exec: PodExec = async () => ({ exitCode: 1, stdout: "", stderr: "error: websocket: close 1006 (abnormal closure)" });
    const restore = await restorePvcCache(exec, spec, options);
    assert.equal(restore.status, "failed");
    assert.match(restore.reason ?? "", /exited 1: error: websocket: close 1006/);
    assert.equal((await savePvcCache(exec, spec, options)).status, "failed");
  });

  it("report a saved entry whose eviction failed as saved, with the reason", async () => {
    const replies = [{ exitCode: 0, stdout: `knotless-cache saved 10 ${"a".repeat(64)}\n`, stderr: "" }, { exitCode: 137, stdout: "", stderr: "Killed" }];
    const save = await savePvcCache(async () => replies.shift()!, spec, options);
    assert.deepEqual({ ...save, ms: 0 }, { status: "saved", bytes: 10, ms: 0, reason: "saved, but the eviction failed: the cache evict command exited 137: Killed" });
  });
});

for (const flavour of CACHE_FLAVOURS) {
  describe(`the PVC backend under ${flavour === "host" ? "the host's sh" : "busybox sh"}`, { skip: HAS_BWRAP ? false : "bwrap is not installed" }, () => {
    it("misses in a first pod, saves, and restores exactly in a later pod on the same claim; a fallback key finds it too", async () => {
      const first = createCachePod(flavour);
      assert.equal((await restorePvcCache(first.exec, spec, options)).status, "miss");
      mkdirSync(join(first.work, "node_modules/pkg"), { recursive: true });
      writeFileSync(join(first.work, "node_modules/pkg/index.js"), "module.exports = 1;\n");
      const save = await savePvcCache(first.exec, spec, options);
      assert.equal(save.status, "saved", save.reason);
      assert.ok(save.bytes > 0);

      const second = createCachePod(flavour, first.claim);
      const restore = await restorePvcCache(second.exec, spec, { ...options, nonce: "run-2" });
      assert.deepEqual({ ...restore, ms: 0 }, { status: "exact", restoredKey: "npm-abc", bytes: save.bytes, ms: 0 });
      assert.equal(readFileSync(join(second.work, "node_modules/pkg/index.js"), "utf8"), "module.exports = 1;\n");
      assert.equal((await savePvcCache(second.exec, spec, options)).status, "exists");

      const third = createCachePod(flavour, first.claim);
      const fallback = await restorePvcCache(third.exec, { ...spec, key: "npm-def" }, options);
      assert.equal(fallback.status, "fallback");
      assert.equal(fallback.restoredKey, "npm-abc");
    });

    it("reports a corrupt entry as a failed restore, and the next run misses", async () => {
      const pod = createCachePod(flavour);
      mkdirSync(join(pod.work, "node_modules"));
      writeFileSync(join(pod.work, "node_modules/a"), "a");
      await savePvcCache(pod.exec, spec, options);
      writeFileSync(join(pod.claim, hashCacheName(options.repo), `${hashCacheName(spec.key)}.tar.gz`), "not gzip");
      const restore = await restorePvcCache(pod.exec, spec, options);
      assert.equal(restore.status, "failed");
      assert.match(restore.reason ?? "", /^corrupt entry, removed: /);
      assert.equal((await restorePvcCache(pod.exec, spec, options)).status, "miss");
    });

    it("evicts older entries when a save takes the claim over its budget", async () => {
      const pod = createCachePod(flavour);
      mkdirSync(join(pod.work, "node_modules"));
      writeFileSync(join(pod.work, "node_modules/a"), "x".repeat(1000));
      const firstSave = await savePvcCache(pod.exec, { ...spec, key: "npm-1" }, options);
      const budget = firstSave.bytes + 10;
      await new Promise((r) => setTimeout(r, 1100)); // a later mtime second for the newer entry
      assert.equal((await savePvcCache(pod.exec, { ...spec, key: "npm-2" }, { ...options, maxBytes: budget })).status, "saved");
      assert.equal((await restorePvcCache(pod.exec, { ...spec, key: "npm-1", restoreKeys: [] }, options)).status, "miss");
      assert.equal((await restorePvcCache(pod.exec, { ...spec, key: "npm-2", restoreKeys: [] }, options)).status, "exact");
    });
  });
}
