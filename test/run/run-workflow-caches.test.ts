// The run's cache and artifact steps through a scripted executor and an in-memory store: when each happens, what is reported, what never fails a run.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ArtifactSpec } from "../../src/workflow/artifact-types.js";
import { PassThrough } from "node:stream";
import { createHostCacheDriver } from "../../src/cache/host-cache-driver.js";
import type { CacheArchiveGate } from "../../src/executor/cache-archive.js";
import type { CacheSpec } from "../../src/workflow/cache-types.js";
import { exitCodeForResult } from "../../src/cli/exit-codes.js";
import type { RunEvent } from "../../src/events/run-events.js";
import { Kubectl } from "../../src/cluster/kubectl/kubectl.js";
import { KubectlCluster } from "../../src/cluster/kubectl/kubectl-cluster.js";
import type { RunResult } from "../../src/run/run-result.js";
import { runWorkflow } from "../../src/run/run-workflow.js";
import type { RunSettings } from "../../src/executor/kubernetes/context.js";
import { exampleSettings } from "../support/example-settings.js";
import { ScriptedExecutor, STEP_SUCCEEDED, untilAborted, type ExecutorScript } from "../support/scripted-executor.js";
import { MemoryCacheStore } from "../cache/memory-store.js";

const NO_CLUSTER = new KubectlCluster(
  new Kubectl({
    binary: "kubectl",
    spawn: () => {
      throw new Error("this test spawns no kubectl");
    },
  }),
  {},
);

const REPO = "did:plc:abc/knot";

/** A gate that lets every byte through: these tests are about when the run's cache steps happen, not what archives hold. */
function openGate(): CacheArchiveGate {
  const stream = new PassThrough();
  return { stream, done: new Promise((resolve) => stream.on("end", resolve)) };
}
const DEPS: CacheSpec = { key: "deps-3f2a", restoreKeys: ["deps-"], paths: ["/work/node_modules"] };

let checkout = "";
before(async () => {
  checkout = await mkdtemp(join(tmpdir(), "knotless-run-caches-"));
  await writeFile(join(checkout, "package-lock.json"), "{}\n");
});
after(async () => {
  await rm(checkout, { recursive: true, force: true });
});

interface Run {
  readonly result: RunResult;
  readonly events: RunEvent[];
  readonly executor: ScriptedExecutor;
}

async function run(
  store: MemoryCacheStore | undefined,
  script: ExecutorScript,
  settings: Partial<RunSettings>,
  signal?: AbortSignal,
): Promise<Run> {
  const events: RunEvent[] = [];
  let executor: ScriptedExecutor | undefined;
  const result = await runWorkflow({
    settings: { ...exampleSettings({ steps: ["install", "test"] }), checkoutDir: checkout, ...settings },
    cluster: NO_CLUSTER,
    signal: signal ?? new AbortController().signal,
    sinks: [(event) => events.push(event)],
    createExecutor: (ctx) => (executor = new ScriptedExecutor(ctx, script)),
    ...(store
      ? {
          cacheDriver: (ex) =>
            createHostCacheDriver({ store, repo: REPO, executor: ex, createGate: openGate, description: "memory" }),
        }
      : {}),
  });
  assert.ok(executor);
  return { result, events, executor };
}

function eventsOf<K extends RunEvent["kind"]>(
  events: readonly RunEvent[],
  kind: K,
): Array<Extract<RunEvent, { kind: K }>> {
  return events.filter((event): event is Extract<RunEvent, { kind: K }> => event.kind === kind);
}

describe("runWorkflow with caches", () => {
  it("misses on the first run and saves after its steps, before copyOut; the second run hits the key exactly and saves nothing", async () => {
    const store = new MemoryCacheStore();
    const first = await run(store, {}, { caches: [DEPS] });
    assert.deepEqual(first.executor.calls, [
      "setup",
      "copyIn",
      "runStep 0",
      "runStep 1",
      "saveCache deps-3f2a",
      "copyOut",
      "teardown",
    ]);
    assert.equal(first.result.status, "success");
    assert.equal(first.result.caches[0]!.restore.status, "miss");
    assert.equal(first.result.caches[0]!.save.status, "saved");
    assert.ok(first.result.caches[0]!.save.bytes > 0);
    assert.deepEqual(store.keys(REPO), ["deps-3f2a"]);

    const second = await run(store, {}, { caches: [DEPS] });
    assert.deepEqual(second.executor.calls, [
      "setup",
      "copyIn",
      "restoreCache deps-3f2a",
      "runStep 0",
      "runStep 1",
      "copyOut",
      "teardown",
    ]);
    const report = second.result.caches[0]!;
    assert.equal(report.restore.status, "exact");
    assert.equal(report.restore.restoredKey, "deps-3f2a");
    assert.equal(report.restore.bytes, store.get(REPO, "deps-3f2a")!.length);
    assert.equal(report.save.status, "skipped");
    assert.match(report.save.reason ?? "", /exact hit/);
    assert.deepEqual(
      eventsOf(second.events, "cache-restore").map((e) => e.status),
      ["exact"],
    );
  });

  it("restores the newest entry of the first matching fallback prefix, says which, and saves the exact key", async () => {
    const store = new MemoryCacheStore();
    store.put(REPO, "deps-older", Buffer.from("older"), 10);
    store.put(REPO, "deps-newer", Buffer.from("newer"), 20);
    store.put("did:plc:other/knot", "deps-newest", Buffer.from("theirs"), 30);
    const { result, events } = await run(store, {}, { caches: [DEPS] });
    assert.deepEqual(result.caches[0]!.restore, {
      status: "fallback",
      restoredKey: "deps-newer",
      bytes: 5,
      ms: result.caches[0]!.restore.ms,
    });
    assert.equal(result.caches[0]!.save.status, "saved");
    assert.deepEqual(store.keys(REPO), ["deps-3f2a", "deps-newer", "deps-older"]);
    assert.equal(eventsOf(events, "cache-restore")[0]!.restoredKey, "deps-newer");
  });

  it("saves nothing after a failed step, and says why", async () => {
    const store = new MemoryCacheStore();
    const { result, executor } = await run(
      store,
      { runStep: async (index) => (index === 1 ? { status: "failed", exitCode: 2, timedOut: false } : STEP_SUCCEEDED) },
      { caches: [DEPS] },
    );
    assert.equal(result.status, "failed");
    assert.equal(result.exitCode, 2);
    assert.ok(!executor.calls.some((call) => call.startsWith("saveCache")));
    assert.deepEqual(result.caches[0]!.save, { status: "skipped", bytes: 0, ms: 0, reason: "the run failed" });
    assert.deepEqual(store.keys(REPO), []);
  });

  it("takes a store that cannot be read as a warning: the restore failed, the run succeeds and still saves", async () => {
    const store = new MemoryCacheStore();
    store.failLookups = new Error("EACCES: permission denied, scandir '/var/cache/knotless'");
    const { result, events } = await run(store, {}, { caches: [DEPS] });
    assert.equal(result.status, "success");
    assert.equal(result.caches[0]!.restore.status, "failed");
    assert.match(result.caches[0]!.restore.reason ?? "", /EACCES/);
    assert.equal(result.caches[0]!.save.status, "saved");
    assert.equal(eventsOf(events, "cache-restore")[0]!.status, "failed");
  });

  it("takes a corrupt entry as a failed restore, never a failed run", async () => {
    const store = new MemoryCacheStore();
    store.put(REPO, "deps-3f2a", Buffer.from("the saved archive"));
    store.corrupt(REPO, "deps-3f2a", Buffer.from("the saved arch"));
    const { result } = await run(store, {}, { caches: [DEPS] });
    assert.equal(result.status, "success");
    assert.equal(result.caches[0]!.restore.status, "failed");
    assert.match(result.caches[0]!.restore.reason ?? "", /sha256/);
    // The corrupt entry was removed by the store, so the successful run saved a fresh one.
    assert.equal(result.caches[0]!.save.status, "saved");
  });

  it("lets two runs that save the same key at once end with one saved and the other told it exists", async () => {
    const store = new MemoryCacheStore();
    const [a, b] = await Promise.all([run(store, {}, { caches: [DEPS] }), run(store, {}, { caches: [DEPS] })]);
    assert.deepEqual([a.result.caches[0]!.save.status, b.result.caches[0]!.save.status].sort(), ["exists", "saved"]);
    assert.equal(a.result.status, "success");
    assert.equal(b.result.status, "success");
    assert.deepEqual(store.keys(REPO), ["deps-3f2a"]);
  });

  it("takes a failed save as a warning: the run still succeeds", async () => {
    const store = new MemoryCacheStore();
    const { result, events } = await run(
      store,
      {
        saveCache: async (_spec, writer) => {
          await writer.abort();
          throw new Error(
            'the archive was refused, nothing stored: symlink target "../../etc" resolves outside the destination',
          );
        },
      },
      { caches: [DEPS] },
    );
    assert.equal(result.status, "success");
    assert.equal(result.caches[0]!.save.status, "failed");
    assert.match(eventsOf(events, "cache-save")[0]!.reason ?? "", /refused/);
    assert.deepEqual(store.keys(REPO), []);
  });

  it("reports every cache as failed, and runs anyway, when caches are configured without a store", async () => {
    const { result } = await run(undefined, {}, { caches: [DEPS] });
    assert.equal(result.status, "success");
    assert.equal(result.caches[0]!.restore.status, "failed");
    assert.match(result.caches[0]!.restore.reason ?? "", /no cache store/);
  });

  it("does not touch the store without caches, and reports none", async () => {
    const store = new MemoryCacheStore();
    const { result, executor } = await run(store, {}, {});
    assert.deepEqual(store.calls, []);
    assert.deepEqual(result.caches, []);
    assert.deepEqual(executor.calls, ["setup", "copyIn", "runStep 0", "runStep 1", "copyOut", "teardown"]);
  });

  it("saves nothing when the run is cancelled mid-step, and says so", async () => {
    const store = new MemoryCacheStore();
    const controller = new AbortController();
    const { result } = await run(
      store,
      {
        runStep: async (_index, _deadline, ctx) => {
          controller.abort();
          return untilAborted(ctx.signal);
        },
      },
      { caches: [DEPS] },
      controller.signal,
    );
    assert.equal(result.status, "cancelled");
    assert.equal(result.caches[0]!.save.status, "skipped");
    assert.match(result.caches[0]!.save.reason ?? "", /cancelled/);
    assert.deepEqual(store.keys(REPO), []);
  });
});

const DIST: ArtifactSpec = { name: "dist", paths: ["dist/**"], when: "success", required: false };
const FAILURE_LOGS: ArtifactSpec = {
  name: "failure-logs",
  paths: ["/outputs/*.log"],
  when: "failure",
  required: false,
};
const ALWAYS: ArtifactSpec = { name: "report", paths: ["/outputs/report.xml"], when: "always", required: false };

describe("runWorkflow with artifacts", () => {
  it("collects after copyOut the artifacts whose when matches a successful run, and skips the others", async () => {
    const { result, executor, events } = await run(undefined, {}, { artifacts: [DIST, FAILURE_LOGS, ALWAYS] });
    assert.deepEqual(executor.calls, [
      "setup",
      "copyIn",
      "runStep 0",
      "runStep 1",
      "copyOut",
      "collectArtifact dist",
      "collectArtifact report",
      "teardown",
    ]);
    assert.deepEqual(
      result.artifacts.map((a) => [a.name, a.status]),
      [
        ["dist", "collected"],
        ["failure-logs", "skipped"],
        ["report", "collected"],
      ],
    );
    assert.match(result.artifacts[1]!.reason ?? "", /when: failure, and the run succeeded/);
    assert.deepEqual(
      eventsOf(events, "artifact").map((e) => e.status),
      ["collected", "skipped", "collected"],
    );
  });

  it("collects the failure and always artifacts of a run whose step failed, and keeps the step's verdict", async () => {
    const { result, executor } = await run(
      undefined,
      { runStep: async () => ({ status: "failed", exitCode: 4, timedOut: false }) },
      { artifacts: [DIST, FAILURE_LOGS, ALWAYS] },
    );
    assert.deepEqual(executor.calls, [
      "setup",
      "copyIn",
      "runStep 0",
      "copyOut",
      "collectArtifact failure-logs",
      "collectArtifact report",
      "teardown",
    ]);
    assert.equal(result.status, "failed");
    assert.equal(result.exitCode, 4);
    assert.deepEqual(
      result.artifacts.map((a) => a.status),
      ["skipped", "collected", "collected"],
    );
  });

  it("takes an artifact that matched nothing as a warning when it is not required", async () => {
    const { result, events } = await run(
      undefined,
      {
        collectArtifact: async (spec) => ({
          name: spec.name,
          status: "empty",
          files: [],
          reason: "no file in the pod matches dist/**",
        }),
      },
      { artifacts: [DIST] },
    );
    assert.equal(result.status, "success");
    assert.equal(result.artifacts[0]!.status, "empty");
    assert.equal(exitCodeForResult(result), 0);
    assert.equal(eventsOf(events, "artifact")[0]!.required, false);
  });

  it("lists an artifact's file named after a secret masked in the result, as the outputs are", async () => {
    const secret = "s3cr3t-artifact-name";
    const { result } = await run(
      undefined,
      {
        collectArtifact: async (spec) => ({
          name: spec.name,
          status: "collected",
          files: [
            { path: `keys/${secret}.txt`, size: 1, sha256: "0".repeat(64) },
            { path: "plain.txt", size: 1, sha256: "1".repeat(64) },
          ],
        }),
      },
      { artifacts: [DIST], secrets: [{ name: "TOKEN", value: secret }] },
    );
    assert.deepEqual(
      result.artifacts[0]!.files.map((file) => file.path),
      ["keys/***.txt", "plain.txt"],
    );
    assert.ok(!JSON.stringify(result).includes(secret));
  });

  it("fails a successful run with a clear error and exit code 1 when a required artifact matched nothing", async () => {
    const { result } = await run(
      undefined,
      {
        collectArtifact: async (spec) => ({
          name: spec.name,
          status: "empty",
          files: [],
          reason: "no file in the pod matches dist/**",
        }),
      },
      { artifacts: [{ ...DIST, required: true }] },
    );
    assert.equal(result.status, "failed");
    assert.equal(result.errorReason, "artifact-missing");
    assert.match(result.error ?? "", /required artifact not collected: dist \(no file in the pod matches dist\/\*\*\)/);
    assert.equal(exitCodeForResult(result), 1);
  });

  it("keeps a failed run's own verdict when a required failure artifact is missing too, and says so", async () => {
    const { result, events } = await run(
      undefined,
      {
        runStep: async () => ({ status: "failed", exitCode: 4, timedOut: false }),
        collectArtifact: async (spec) => ({ name: spec.name, status: "empty", files: [] }),
      },
      { artifacts: [{ ...FAILURE_LOGS, required: true }] },
    );
    assert.equal(result.exitCode, 4);
    assert.equal(result.errorReason, null);
    assert.ok(
      eventsOf(events, "notice").some(
        (n) => n.level === "error" && /required artifact not collected: failure-logs/.test(n.message),
      ),
    );
  });

  it("skips every artifact of a cancelled run", async () => {
    const controller = new AbortController();
    const { result, executor } = await run(
      undefined,
      {
        runStep: async (_index, _deadline, ctx) => {
          controller.abort();
          return untilAborted(ctx.signal);
        },
      },
      { artifacts: [ALWAYS] },
      controller.signal,
    );
    assert.equal(result.status, "cancelled");
    assert.ok(!executor.calls.some((call) => call.startsWith("collectArtifact")));
    assert.equal(result.artifacts[0]!.status, "skipped");
  });
});
