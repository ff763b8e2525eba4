// Tests of the cancel watch: a cancel requested on the run's Job reaches the run; the watch restarts, warns once, stops.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { startCancelWatch } from "../../../src/executor/kubernetes/cancel-watch.js";
import type { CancelRequest } from "../../../src/manifests/job-annotations.js";
import { buildTestContext } from "./test-context.js";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { WatchOptions } from "../../../src/cluster/cluster.js";
import { ForbiddenError } from "../../../src/cluster/errors.js";
import { ScriptedCluster } from "../../support/scripted-cluster.js";
import { until } from "../../support/until.js";

const FAST_RESTARTS = {
  cancelWatchRetry: {
    budgetMs: Number.POSITIVE_INFINITY,
    maxAttempts: Number.POSITIVE_INFINITY,
    initialDelayMs: 1,
    maxDelayMs: 5,
  },
};
const REFUSED = {
  exitCode: 1,
  stderr: "The connection to the server 127.0.0.1:6443 was refused - did you specify the right host or port?\n",
};

/** One watch event as kubectl prints it with --output-watch-events -o json. */
function event(type: string, annotations: Record<string, string> = {}, pretty = false): string {
  const document = {
    type,
    object: {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "knotless-run-42", namespace: "ci", annotations },
    },
  };
  return `${pretty ? JSON.stringify(document, null, 4) : JSON.stringify(document)}\n`;
}

const REQUESTED = {
  "knotless.dev/cancel-requested": "2026-01-01T00:00:00.000Z",
  "knotless.dev/cancel-requested-by": "77@ops-host",
};

describe("startCancelWatch", () => {
  it("tells the run when knotless.dev/cancel-requested appears on its Job, with when and by whom, and ends the watch", async () => {
    const { ctx, kubectl } = buildTestContext({ timings: FAST_RESTARTS });
    kubectl.on("get job", {
      stdout: [
        event("ADDED"),
        event("MODIFIED", { "knotless.dev/heartbeat": "x" }),
        event("MODIFIED", REQUESTED, true),
      ],
      hang: true,
    });
    const requests: CancelRequest[] = [];
    const watch = startCancelWatch(ctx, (request) => requests.push(request));
    await until(() => requests.length === 1, "the cancel");
    await watch.stop();
    assert.deepEqual(requests, [{ at: "2026-01-01T00:00:00.000Z", by: { pid: 77, host: "ops-host" } }]);
    assert.deepEqual(
      kubectl.calls.map((c) => c.args.slice(6)),
      [["get", "job", "knotless-run-42", "--watch", "--output-watch-events", "-o", "json", "--request-timeout", "5m"]],
    );
    assert.deepEqual(kubectl.calls[0]!.killSignals, ["SIGTERM"], "the watch is ended once the request is seen");
  });

  it("sees a request made before the watch began in the Job's first event", async () => {
    const { ctx, kubectl } = buildTestContext({ timings: FAST_RESTARTS });
    kubectl.on("get job", { stdout: event("ADDED", { "knotless.dev/cancel-requested": "soon" }), hang: true });
    const requests: CancelRequest[] = [];
    const watch = startCancelWatch(ctx, (request) => requests.push(request));
    await until(() => requests.length === 1, "the cancel");
    await watch.stop();
    assert.deepEqual(requests, [{ at: "soon", by: undefined }]);
  });

  it("starts the watch again when it ends or fails, warning once, until the request comes", async () => {
    const { ctx, kubectl, eventsOf } = buildTestContext({ timings: FAST_RESTARTS });
    kubectl.on("get job", [
      { stdout: event("ADDED") },
      REFUSED,
      REFUSED,
      REFUSED,
      { stdout: event("ADDED", REQUESTED), hang: true },
    ]);
    const requests: CancelRequest[] = [];
    const watch = startCancelWatch(ctx, (request) => requests.push(request));
    await until(() => requests.length === 1, "the cancel");
    await watch.stop();
    assert.equal(kubectl.calls.length, 5);
    const warnings = eventsOf("notice").filter((n) => n.level === "warning");
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.match(
      warnings[0]!.message,
      /^cancel watch: watching Job knotless-run-42 for knotless\.dev\/cancel-requested failed \(The connection to the server .* was refused.*\); retrying$/,
    );
  });

  it("stops watching when the Job is deleted, and when the credential may not watch it (with a warning)", async () => {
    const deleted = buildTestContext({ timings: FAST_RESTARTS });
    deleted.kubectl.on("get job", { stdout: [event("ADDED"), event("DELETED", REQUESTED)], hang: true });
    const gone = startCancelWatch(deleted.ctx, () => assert.fail("a deleted Job is no cancel request"));
    await until(() => deleted.kubectl.calls[0]?.killSignals.length === 1, "the watch ended");
    await gone.stop();
    assert.equal(deleted.kubectl.calls.length, 1);

    const forbidden = buildTestContext({ timings: FAST_RESTARTS });
    forbidden.kubectl.on("get job", {
      exitCode: 1,
      stderr:
        'Error from server (Forbidden): jobs.batch "knotless-run-42" is forbidden: User "ci" cannot watch resource "jobs"\n',
    });
    const refused = startCancelWatch(forbidden.ctx, () => assert.fail("no request"));
    await until(() => forbidden.eventsOf("notice").length === 1, "the warning");
    await sleep(20);
    await refused.stop();
    assert.equal(forbidden.kubectl.calls.length, 1, "not retried");
    assert.match(
      forbidden.eventsOf("notice")[0]!.message,
      /cannot watch Job knotless-run-42 .*Forbidden.*; a cancel requested with `knotless-runner-k8s cancel` will not reach this run/,
    );
  });

  it("stops watching with a warning naming what the watch needs when kubectl 1.30 words the refusal as unknown, or the token is refused", async () => {
    for (const stderr of [
      "Error from server (Forbidden): unknown (get jobs.batch)\n",
      "error: You must be logged in to the server (Unauthorized)\n",
    ]) {
      const refused = buildTestContext({ timings: FAST_RESTARTS });
      refused.kubectl.on("get job", { exitCode: 1, stderr });
      const watch = startCancelWatch(refused.ctx, () => assert.fail("no request"));
      await until(() => refused.eventsOf("notice").length === 1, "the warning");
      await sleep(20);
      await watch.stop();
      assert.equal(refused.kubectl.calls.length, 1, `not retried: ${stderr}`);
      assert.match(
        refused.eventsOf("notice")[0]!.message,
        /; the watch needs get and watch on jobs\.batch\); a cancel requested with `knotless-runner-k8s cancel` will not reach this run/,
      );
    }
  });

  it("ends the watch's kubectl on stop, and reports nothing for it", async () => {
    const { ctx, kubectl, events } = buildTestContext({ timings: FAST_RESTARTS });
    kubectl.on("get job", { stdout: event("ADDED"), hang: true });
    const watch = startCancelWatch(ctx, () => assert.fail("no request"));
    await until(() => kubectl.calls.length === 1, "the watch");
    await watch.stop();
    assert.deepEqual(kubectl.calls[0]!.killSignals, ["SIGTERM"]);
    assert.deepEqual(events, []);
  });
});

describe("startCancelWatch on any transport", () => {
  it("tells the run of a cancel request a transport's watch delivers, and stops that watch", async () => {
    const { ctx } = buildTestContext({ timings: FAST_RESTARTS });
    let stopped: AbortSignal | undefined;
    const cluster = new ScriptedCluster().on(
      "watchJob",
      async (_namespace: string, _name: string, options: WatchOptions<IJob>) => {
        options.onEvent({
          type: "ADDED",
          object: { apiVersion: "batch/v1", kind: "Job", metadata: { name: "knotless-run-42" } },
        });
        options.onEvent({
          type: "MODIFIED",
          object: {
            apiVersion: "batch/v1",
            kind: "Job",
            metadata: { name: "knotless-run-42", annotations: REQUESTED },
          },
        });
        stopped = options.signal;
      },
    );
    const requests: CancelRequest[] = [];
    const watch = startCancelWatch({ ...ctx, cluster }, (request) => requests.push(request));
    await until(() => requests.length === 1, "the cancel");
    await watch.stop();
    assert.deepEqual(requests, [{ at: "2026-01-01T00:00:00.000Z", by: { pid: 77, host: "ops-host" } }]);
    assert.deepEqual(
      cluster.callsTo("watchJob").map((call) => call.args.slice(0, 2)),
      [["ci", "knotless-run-42"]],
    );
    assert.equal(stopped?.aborted, true, "the watch is ended once the request is seen");
  });

  it("warns once and gives up when the transport refuses the watch, naming what the watch needs", async () => {
    const { ctx, eventsOf } = buildTestContext({ timings: FAST_RESTARTS });
    const cluster = new ScriptedCluster().on(
      "watchJob",
      new ForbiddenError("jobs.batch is forbidden", "watch", "jobs.batch"),
    );
    const watch = startCancelWatch({ ...ctx, cluster }, () => assert.fail("no cancel"));
    await until(() => eventsOf("notice").length === 1, "the warning");
    await watch.stop();
    assert.equal(cluster.calls.length, 1);
    assert.match(
      eventsOf("notice")[0]!.message,
      /^cancel watch: cannot watch Job knotless-run-42 \(jobs\.batch is forbidden; the watch needs get and watch on jobs\.batch\)/,
    );
  });
});
