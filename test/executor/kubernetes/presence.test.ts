// Tests of the run's presence in the cluster through the executor: the heartbeat from the create, the cancel watch from the pod's start, both until teardown.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import { InfraError, type CancelledError } from "../../../src/core/errors.js";
import type { ExecutorContext, RunSettings, ExecutorTimings } from "../../../src/executor/kubernetes/context.js";
import { KubernetesExecutor } from "../../../src/executor/kubernetes/kubernetes-executor.js";
import { exampleSettings } from "../../support/example-settings.js";
import { ScriptedKubectl, type RecordedCall, type ScriptedReply } from "../../support/scripted-kubectl.js";
import { pendingPod, podList, runningPod } from "./cluster-objects.js";
import { UNIT_TIMINGS } from "./test-context.js";
import { until } from "../../support/until.js";

function buildExecutor(
  settings: Partial<RunSettings> = {},
  replies: {
    patch?: ScriptedReply;
    pods?: ScriptedReply;
    heartbeatIntervalMs?: number;
    timings?: Partial<ExecutorTimings>;
  } = {},
): { executor: KubernetesExecutor; kubectl: ScriptedKubectl; cancels: CancelledError[] } {
  const kubectl = new ScriptedKubectl();
  kubectl.on("create", (call) => {
    const job = JSON.parse(call.stdin ?? "") as IJob;
    return { stdout: JSON.stringify({ ...job, metadata: { ...job.metadata, namespace: "ci" } }) };
  });
  kubectl.on("get pods", replies.pods ?? podList(runningPod()));
  kubectl.on("delete job", {});
  kubectl.on("patch job", replies.patch ?? {});
  const controller = new AbortController();
  const cancels: CancelledError[] = [];
  const ctx: ExecutorContext = {
    settings: { ...exampleSettings({ steps: ["build"] }), ...settings },
    timings: { ...UNIT_TIMINGS, heartbeatIntervalMs: replies.heartbeatIntervalMs ?? 10, ...replies.timings },
    get cluster() {
      return kubectl.cluster(this.settings.target);
    },
    emit: () => {},
    signal: controller.signal,
    requestCancel: (reason) => cancels.push(reason),
    cleanupSignal: () => new AbortController().signal,
  };
  return { executor: new KubernetesExecutor(ctx), kubectl, cancels };
}

const isHeartbeat = (call: RecordedCall): boolean =>
  call.command[0] === "patch" && call.args.some((arg) => arg.includes("knotless.dev/heartbeat"));

describe("the executor's presence in the cluster", () => {
  it("records its owner on the Job, beats from the create and watches from the pod's start until teardown, and deletes it only after both stopped", async () => {
    const { executor, kubectl } = buildExecutor({ owner: { host: "ci-1", pid: 4242 } });
    kubectl.on("get job", {
      stdout: `${JSON.stringify({ type: "ADDED", object: { metadata: { name: "knotless-run-42" } } })}\n`,
      hang: true,
    });
    await executor.setup();
    const created = JSON.parse(kubectl.callsTo("create")[0]!.stdin!) as IJob;
    assert.equal(created.metadata?.annotations?.["knotless.dev/owner"], "4242@ci-1");
    const podRead = kubectl.calls.findIndex((call) => call.command.join(" ").startsWith("get pods"));
    const watchAt = kubectl.calls.findIndex((call) =>
      call.command.join(" ").startsWith("get job knotless-run-42 --watch"),
    );
    assert.ok(
      podRead >= 0 && watchAt > podRead,
      "the watch starts once the pod was read running, not beside the create",
    );
    await until(() => kubectl.calls.filter(isHeartbeat).length >= 2, "two heartbeats");
    await executor.teardown();
    const watch = kubectl.callsTo("get job")[0]!;
    assert.deepEqual(watch.killSignals, ["SIGTERM"]);
    assert.equal(kubectl.calls.at(-1)!.command[0], "delete", "nothing after the delete");
    const beats = kubectl.calls.filter(isHeartbeat).length;
    await sleep(50);
    assert.equal(kubectl.calls.filter(isHeartbeat).length, beats, "no heartbeat after teardown");
  });

  it("starts the watch while the pod is still Pending once cancelWatchAfterMs has passed, so a cancel reaches a long wait", async () => {
    // The pod never runs: the wait gives up after podTimeoutMs, well after the watch started.
    const { executor, kubectl } = buildExecutor(
      { podTimeoutMs: 1000 },
      { pods: podList(pendingPod()), timings: { cancelWatchAfterMs: 150 } },
    );
    kubectl.on("get job", { hang: true });
    kubectl.on("get events", { stdout: JSON.stringify({ items: [] }) });
    const setup = executor.setup().then(
      () => assert.fail("the pod never ran"),
      () => {},
    );
    await until(() => kubectl.callsTo("get pods").length >= 1, "the pod wait");
    assert.equal(kubectl.callsTo("get job").length, 0, "no watch at the start of the wait");
    await until(() => kubectl.callsTo("get job").length === 1, "the watch during the wait");
    assert.equal(kubectl.callsTo("get job")[0]!.ended, undefined, "the watch runs while the pod is still Pending");
    await setup;
    await executor.teardown();
  });

  it("has beaten once, and heard the answer, by the time setup returns", async () => {
    const { executor, kubectl } = buildExecutor({}, { heartbeatIntervalMs: 60_000 });
    kubectl.on("get job", { hang: true });
    await executor.setup();
    const beats = kubectl.calls.filter(isHeartbeat);
    assert.equal(beats.length, 1, "the first heartbeat is made at setup, not one interval later");
    assert.notEqual(beats[0]!.ended, undefined, "setup waited for its answer");
    await executor.teardown();
  });

  for (const [kind, stderr] of [
    [
      "forbidden",
      'Error from server (Forbidden): jobs.batch "knotless-run-42" is forbidden: User "system:serviceaccount:ci:knotless-runner" cannot patch resource "jobs" in API group "batch" in the namespace "ci"\n',
    ],
    ["unauthorized", "error: You must be logged in to the server (Unauthorized)\n"],
  ] as const) {
    it(`fails setup with ${kind}, naming patch on jobs.batch, when the first heartbeat is refused, stops the pod wait and deletes the Job at teardown`, async () => {
      // The pod stays Pending: only the refused heartbeat can end this setup.
      const { executor, kubectl } = buildExecutor({}, { patch: { exitCode: 1, stderr }, pods: podList(pendingPod()) });
      kubectl.on("get job", { hang: true });
      kubectl.on("get events", { stdout: JSON.stringify({ items: [] }) });
      const started = Date.now();
      const failure = await executor.setup().then(
        () => assert.fail("setup succeeded"),
        (error: unknown) => error,
      );
      assert.ok(failure instanceof InfraError, String(failure));
      assert.equal(failure.reason, kind);
      assert.match(
        failure.message,
        /cannot set the run's heartbeat on Job knotless-run-42 \(it needs patch on jobs\.batch; without it gc would take the live run for abandoned\)/,
      );
      // The pod timeout is 15 min: 20 s tells at once from it on a busy machine.
      assert.ok(Date.now() - started < 20_000, "it failed at once, not at the pod timeout");
      const podReads = kubectl.callsTo("get pods").length;
      const report = await executor.teardown();
      assert.equal(report.deleted, true);
      assert.equal(kubectl.calls.at(-1)!.command[0], "delete");
      await sleep(50);
      assert.equal(kubectl.callsTo("get pods").length, podReads, "the pod wait stopped");
    });
  }

  it("cancels the run when a cancel is requested on its Job", async () => {
    const { executor, kubectl, cancels } = buildExecutor();
    kubectl.on("get job", {
      stdout: `${JSON.stringify({ type: "MODIFIED", object: { metadata: { annotations: { "knotless.dev/cancel-requested": "2026-01-01T00:00:00Z", "knotless.dev/cancel-requested-by": "9@ops" } } } })}\n`,
      hang: true,
    });
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
    const kept = kubectl
      .callsTo("patch job")
      .filter((call) => call.args.some((arg) => arg.includes("knotless.dev/kept")));
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
