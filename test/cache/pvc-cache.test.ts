// The PVC backend's driver, run for real in sandbox pods that share one claim: a miss, then a hit in a later pod; and its failures against scripted output.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { CacheCorruptError, type CacheSpec } from "../../src/workflow/cache-types.js";
import { createPvcCacheDriver, formatPvcNonce, type PodExec } from "../../src/cache/pvc-cache.js";
import { hashCacheName } from "../../src/pod/pvc-layout.js";
import { PvcOutputError } from "../../src/cache/pvc-output.js";
import { CACHE_FLAVOURS, createCachePod, HAS_BWRAP } from "./pvc-sandbox.js";

const REPO = "did:plc:abc/knot";
const spec: CacheSpec = { key: "npm-abc", restoreKeys: ["npm-"], paths: ["/work/node_modules"] };
const driverFor = (exec: PodExec, extra: { maxBytes?: number; nonce?: string; warn?: (m: string) => void } = {}) =>
  createPvcCacheDriver({
    exec,
    repo: REPO,
    claim: "ci-cache",
    maxBytes: extra.maxBytes ?? 1 << 30,
    nonce: extra.nonce ?? "run-1",
    now: Date.now,
    ...(extra.warn ? { warn: extra.warn } : {}),
  });

describe("formatPvcNonce", () => {
  it("makes any run id a safe temporary-name part", () => {
    assert.equal(formatPvcNonce("Some.Run/ID 1"), "Some-Run-ID-1");
    assert.equal(formatPvcNonce(""), "run");
    assert.equal(formatPvcNonce("x".repeat(100)).length, 64);
  });
});

describe("the PVC cache driver against scripted output", () => {
  it("throws for a cut exec, so the run reports a failed restore or save", async () => {
    const driver = driverFor(async () => ({
      exitCode: 1,
      stdout: "",
      stderr: "error: websocket: close 1006 (abnormal closure)",
    }));
    await assert.rejects(driver.restore(spec), /exited 1: error: websocket: close 1006/);
    await assert.rejects(driver.save(spec), PvcOutputError);
  });

  it("keeps a save whose eviction failed, and says so", async () => {
    const replies = [
      { exitCode: 0, stdout: `knotless-cache saved 10 ${"a".repeat(64)}\n`, stderr: "" },
      { exitCode: 137, stdout: "", stderr: "Killed" },
    ];
    const warnings: string[] = [];
    const saved = await driverFor(async () => replies.shift()!, { warn: (m) => warnings.push(m) }).save(spec);
    assert.deepEqual(saved, { status: "saved", bytes: 10 });
    assert.deepEqual(warnings, [
      "cache npm-abc saved, but the claim's eviction failed: the cache evict command exited 137: Killed",
    ]);
  });

  it("takes an entry the image cannot decompress for a miss, with a warning, never a failure", async () => {
    const meta = `entry ${hashCacheName("npm-abc")} 1767312000\nknotless-cache-entry 1\nrepo ${REPO}\nbytes 10\nsha256 ${"a".repeat(64)}\ncompression zstd\ncreatedAt 1767312000000\nkey npm-abc\n`;
    const replies = [
      { exitCode: 0, stdout: `${meta}knotless-cache listed 1\n`, stderr: "" },
      { exitCode: 0, stdout: "knotless-cache no-decoder zstd\n", stderr: "" },
    ];
    const warnings: string[] = [];
    assert.deepEqual(await driverFor(async () => replies.shift()!, { warn: (m) => warnings.push(m) }).restore(spec), {
      kind: "miss",
    });
    assert.deepEqual(warnings, [
      "cache npm-abc: the entry npm-abc is zstd-compressed and the image has no zstd: not restored (a miss)",
    ]);
  });

  it("refuses an archive over the budget as a failed save", async () => {
    const driver = driverFor(async () => ({ exitCode: 0, stdout: "knotless-cache too-large 20 10\n", stderr: "" }));
    await assert.rejects(driver.save(spec), /larger than the cache budget \(10 bytes\)/);
  });
});

for (const flavour of CACHE_FLAVOURS) {
  describe(
    `the PVC cache driver under ${flavour === "host" ? "the host's sh" : "busybox sh"}`,
    { skip: HAS_BWRAP ? false : "bwrap is not installed" },
    () => {
      it("misses in a first pod, saves, and restores exactly in a later pod on the same claim; a fallback key finds it too", async () => {
        const first = createCachePod(flavour);
        assert.deepEqual(await driverFor(first.exec).restore(spec), { kind: "miss" });
        mkdirSync(join(first.work, "node_modules/pkg"), { recursive: true });
        writeFileSync(join(first.work, "node_modules/pkg/index.js"), "module.exports = 1;\n");
        const saved = await driverFor(first.exec).save(spec);
        assert.equal(saved.status, "saved");
        const bytes = saved.status === "saved" ? saved.bytes : 0;
        assert.ok(bytes > 0);

        const second = createCachePod(flavour, first.claim);
        assert.deepEqual(await driverFor(second.exec, { nonce: "run-2" }).restore(spec), {
          kind: "exact",
          restoredKey: "npm-abc",
          bytes,
        });
        assert.equal(readFileSync(join(second.work, "node_modules/pkg/index.js"), "utf8"), "module.exports = 1;\n");
        assert.deepEqual(await driverFor(second.exec).save(spec), { status: "exists", bytes: 0 });

        const third = createCachePod(flavour, first.claim);
        assert.deepEqual(await driverFor(third.exec).restore({ ...spec, key: "npm-def" }), {
          kind: "fallback",
          restoredKey: "npm-abc",
          bytes,
        });
      });

      it("throws CacheCorruptError for a corrupt entry, and the next run misses", async () => {
        const pod = createCachePod(flavour);
        mkdirSync(join(pod.work, "node_modules"));
        writeFileSync(join(pod.work, "node_modules/a"), "a");
        await driverFor(pod.exec).save(spec);
        writeFileSync(join(pod.claim, hashCacheName(REPO), `${hashCacheName(spec.key)}.tar.gz`), "not gzip");
        await assert.rejects(
          driverFor(pod.exec).restore(spec),
          (error) =>
            error instanceof CacheCorruptError && /npm-abc is corrupt \(removed from the claim\)/.test(error.message),
        );
        assert.deepEqual(await driverFor(pod.exec).restore(spec), { kind: "miss" });
      });

      it("says skipped when none of the paths exists", async () => {
        const pod = createCachePod(flavour);
        assert.deepEqual(await driverFor(pod.exec).save(spec), {
          status: "skipped",
          reason: "none of its paths exists in the pod (/work/node_modules)",
        });
      });

      it("evicts older entries when a save takes the claim over its budget", async () => {
        const pod = createCachePod(flavour);
        mkdirSync(join(pod.work, "node_modules"));
        writeFileSync(join(pod.work, "node_modules/a"), "x".repeat(1000));
        const first = await driverFor(pod.exec).save({ ...spec, key: "npm-1" });
        const budget = (first.status === "saved" ? first.bytes : 0) + 10;
        await new Promise((r) => setTimeout(r, 1100)); // a later mtime second for the newer entry
        assert.equal((await driverFor(pod.exec, { maxBytes: budget }).save({ ...spec, key: "npm-2" })).status, "saved");
        assert.deepEqual(await driverFor(pod.exec).restore({ ...spec, key: "npm-1", restoreKeys: [] }), {
          kind: "miss",
        });
        assert.equal((await driverFor(pod.exec).restore({ ...spec, key: "npm-2", restoreKeys: [] })).kind, "exact");
      });
    },
  );
}
