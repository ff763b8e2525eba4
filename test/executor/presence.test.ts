// Tests of the run's presence in the cluster through the executor: heartbeat and cancel watch from the create until teardown.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { CancelledError } from "../../src/errors.js";
import type { ExecutorContext, ExecutorSettings } from "../../src/executor/context.js";
import { KubernetesExecutor } from "../../src/executor/kubernetes-executor.js";
import { exampleSettings } from "../support/example-settings.js";
import { ScriptedKubectl, type RecordedCall } from "../support/scripted-kubectl.js";
import { podList, runningPod } from "./cluster-objects.js";
import { UNIT_TIMINGS } from "./test-context.js";

function buildExecutor(settings: Partial<ExecutorSettings> = {}): { executor: KubernetesExecutor; kubectl: ScriptedKubectl; cancels: CancelledError[] } {
  const kubectl = new ScriptedKubectl();
  kubectl.on("create", (call) => {
    const job = JSON.parse(call.stdin ?? "") as IJob;
    return { stdout: JSON.stringify({ ...job, metadata: { ...job.metadata, namespace: "ci" } }) };
  });
  kubectl.on("get pods", podList(runningPod()));
  kubectl.on("delete job", {});
  kubectl.on("patch job", {});
  const controller = new AbortController();
  const cancels: CancelledError[] = [];
  const ctx: ExecutorContext = {
    settings: { ...exampleSettings({ steps: ["build"] }), ...settings },
    timings: { ...UNIT_TIMINGS, heartbeatIntervalMs: 10 },
    kubectl: kubectl.kubectl,
    emit: () => {},
    signal: controller.signal,
    requestCancel: (reason) => cancels.push(reason),
    cleanupSignal: () => new AbortController().signal,
  };
  return { executor: new KubernetesExecutor(ctx), kubectl, cancels };
}

const isHeartbeat = (call: RecordedCall): boolean => call.command[0] === "patch" && call.args.some((arg) => arg.includes("knotless.dev/heartbeat"));

async function until(check: () => boolean, what: string): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > 5000) assert.fail(`${what} not within 5 s`);
    await sleep(5);
  }
}

describe("the executor's presence in the cluster", () => {
  it("records its owner on the Job, watches it and beats from the create until teardown, and deletes it only after both stopped", async () => {
    const { executor, kubectl } = buildExecutor({ owner: { host: "ci-1", pid: 4242 } });
    kubectl.on("get job", { stdout: `${JSON.stringify({ type: "ADDED", object: { metadata: { name: "knotless-run-42" } } })}\n`, hang: true });
    await executor.setup();
    const created = JSON.parse(kubectl.callsTo("create")[0]!.stdin!) as IJob;
    assert.equal(created.metadata?.annotations?.["knotless.dev/owner"], "4242@ci-1");
    const createdAt = kubectl.calls.findIndex((call) => call.command[0] === "create"); // after the look for a warm placeholder
    assert.equal(kubectl.calls[createdAt + 1]!.command.join(" ").startsWith("get job knotless-run-42 --watch"), true, "the watch starts right after the create");
    await until(() => kubectl.calls.filter(isHeartbeat).length >= 2, "two heartbeats");
    await executor.teardown();
    const watch = kubectl.callsTo("get job")[0]!;
    assert.deepEqual(watch.killSignals, ["SIGTERM"]);
    assert.equal(kubectl.calls.at(-1)!.command[0], "delete", "nothing after the delete");
    const beats = kubectl.calls.filter(isHeartbeat).length;
    await sleep(50);
    assert.equal(kubectl.calls.filter(isHeartbeat).length, beats, "no heartbeat after teardown");
  });

  it("cancels the run when a cancel is requested on its Job", async () => {
    const { executor, kubectl, cancels } = buildExecutor();
    kubectl.on("get job", { stdout: `${JSON.stringify({ type: "MODIFIED", object: { metadata: { annotations: { "knotless.dev/cancel-requested": "2026-01-01T00:00:00Z", "knotless.dev/cancel-requested-by": "9@ops" } } } })}\n`, hang: true });
    await executor.setup();
    await until(() => cancels.length === 1, "the cancel");
    await executor.teardown();
    assert.equal(cancels[0]!.message, "cancel requested through the cluster by 9@ops at 2026-01-01T00:00:00Z");
  });

  it("marks a Job kept with --keep instead of deleting it", async () => {
    const { executor, kubectl } = buildExecutor({ keep: true });
    kubectl.on("get job", { hang: true });
    await executor.setup();
    const report = await executor.teardown();
    assert.equal(report.deleted, false);
    assert.equal(kubectl.callsTo("delete").length, 0);
    const kept = kubectl.callsTo("patch job").filter((call) => call.args.some((arg) => arg.includes("knotless.dev/kept")));
    assert.equal(kept.length, 1);
  });

  it("kills the watch at once on the crash path", async () => {
    const { executor, kubectl } = buildExecutor();
    kubectl.on("get job", { hang: true });
    await executor.setup();
    executor.stopPresenceSync();
    assert.deepEqual(kubectl.callsTo("get job")[0]!.killSignals, ["SIGTERM"]);
    await executor.teardown();
  });
});
