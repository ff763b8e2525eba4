// openCacheDriver: the PVC branch execs the in-pod commands into the run's pod, in its namespace, through kubectl; both branches report what the store did as notices.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { createDirStore } from "../../src/cache/dir-store.js";
import { openCacheDriver } from "../../src/cache/open-cache-driver.js";
import type { Executor } from "../../src/executor/executor.js";
import { ScriptedKubectl } from "../support/scripted-kubectl.js";
import { buildArchive } from "../transfer/tree-helpers.js";
import { podWithoutZstd } from "./pod-without-zstd.js";

const BACKEND = { kind: "pvc", repo: "did:plc:x/knot", claim: "ci-cache", maxBytes: 1000 } as const;
const SPEC = { key: "deps-1", restoreKeys: [], paths: ["/work/deps"] };

describe("openCacheDriver with --cache-pvc", () => {
  it("lists the claim's entries with one kubectl exec into the run's pod, in the namespace the Job landed in", async () => {
    const kubectl = new ScriptedKubectl().on("exec", { stdout: "knotless-cache listed 0\n" });
    const executor = {
      pod: { name: "knotless-run-1-abcde", node: "n" },
      namespace: "from-create",
    } as unknown as Executor;
    const driver = openCacheDriver(BACKEND, executor, () => undefined, {
      cluster: kubectl.cluster({ kubeconfig: "/k" }),
      target: { kubeconfig: "/k" },
      runId: "run 1",
    })!;
    assert.match(driver.description, /PersistentVolumeClaim ci-cache/);
    assert.deepEqual(await driver.restore(SPEC), { kind: "miss" });
    const calls = kubectl.calls.map((call) => call.args);
    assert.equal(calls.length, 1);
    const args = calls[0]!;
    assert.deepEqual(args.slice(0, 10), [
      "--kubeconfig",
      "/k",
      "--namespace",
      "from-create",
      "exec",
      "knotless-run-1-abcde",
      "-c",
      "run",
      "--",
      "sh",
    ]);
    assert.equal(args.at(-2), "knotless-cache-list");
  });

  it("fails a call made before the pod runs, and makes no driver without kubectl", async () => {
    const executor = { pod: undefined, namespace: undefined } as unknown as Executor;
    const kubectl = new ScriptedKubectl();
    const driver = openCacheDriver(BACKEND, executor, () => undefined, {
      cluster: kubectl.cluster(),
      target: {},
      runId: "r",
    })!;
    await assert.rejects(driver.restore(SPEC), /the run's pod is not running/);
    assert.deepEqual(kubectl.calls, [], "no call without a pod");
    assert.equal(
      openCacheDriver(BACKEND, executor, () => undefined),
      undefined,
    );
  });

  it("reports a failed eviction after a save as a warning notice", async () => {
    // The evict command exits 1 in the pod: kubectl says so after what the command wrote.
    const kubectl = new ScriptedKubectl().on("exec", [
      { stdout: `knotless-cache saved 5 ${"b".repeat(64)}\n` },
      { exitCode: 1, stderr: "boom\ncommand terminated with exit code 1\n" },
    ]);
    const events: unknown[] = [];
    const executor = { pod: { name: "p", node: "n" }, namespace: "ci" } as unknown as Executor;
    const driver = openCacheDriver(BACKEND, executor, (e) => events.push(e), {
      cluster: kubectl.cluster(),
      target: {},
      runId: "r",
    })!;
    assert.deepEqual(await driver.save(SPEC), { status: "saved", bytes: 5 });
    assert.deepEqual(events, [
      {
        kind: "notice",
        level: "warning",
        message: "cache deps-1 saved, but the claim's eviction failed: the cache evict command exited 1: boom",
      },
    ]);
  });
});

describe(
  "openCacheDriver with --cache-dir",
  { skip: spawnSync("zstd", ["--version"]).status === 0 ? false : "no zstd on this host" },
  () => {
    it("says in an info notice when a zstd entry goes into a pod without zstd as a plain tar decoded on this host", async (t) => {
      const dir = mkdtempSync(join(tmpdir(), "knotless-open-driver-"));
      t.after(() => rmSync(dir, { recursive: true, force: true }));
      const tar = await buildArchive([
        { header: { name: "work/deps/a", type: "file", mode: 0o644 }, content: Buffer.alloc(5000, 7) },
      ]);
      const writer = await createDirStore({ dir, maxBytes: 1 << 20 }).beginSave("r", SPEC.key, "zstd");
      if (writer === "exists") return assert.fail("exists");
      writer.stream.end(spawnSync("zstd", ["-1", "-q", "-c"], { input: tar }).stdout);
      assert.equal(await writer.commit(), "saved");
      const pod = podWithoutZstd();
      const events: unknown[] = [];
      const driver = openCacheDriver(
        { kind: "dir", repo: "r", dir, maxBytes: 1 << 20 },
        pod.executor as unknown as Executor,
        (e) => events.push(e),
      )!;
      assert.equal((await driver.restore(SPEC)).kind, "exact");
      assert.ok(pod.received[0]?.bytes.equals(tar), "the pod did not get the plain tar");
      assert.deepEqual(events, [
        {
          kind: "notice",
          level: "info",
          message: `cache ${SPEC.key}: the image has no zstd; the entry ${SPEC.key} is decoded on this host and sent as a plain tar (more bytes through the API server)`,
        },
      ]);
    });
  },
);
