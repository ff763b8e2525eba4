// Tests of retrying an exec while the node refuses exec upgrades, and of judging every other failure final.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CancelledError, InfraError } from "../../../src/core/errors.js";
import { withExecRetry, type ExecAttempt } from "../../../src/executor/kubernetes/exec-retry.js";
import { buildPodExec, DEFAULT_TIMINGS, type ExecutorContext } from "../../../src/executor/kubernetes/context.js";
import { isExecSuccess } from "../../../src/cluster/exec.js";
import { runExec } from "../../../src/cluster/run-exec.js";
import {
  DIALING_BACKEND,
  NODE_NAME,
  POD_NAME,
  UPGRADE_REFUSED,
  endedPod,
  failure,
  podList,
  runningPod,
} from "./cluster-objects.js";
import { buildTestContext } from "./test-context.js";
import { isInfraError } from "../../support/infra-error.js";

const POD = { name: POD_NAME, node: NODE_NAME };

/** An attempt as the executor makes one: an exec into the pod, its stdout the value when it exits 0. */
function execAttempt(ctx: ExecutorContext): () => Promise<ExecAttempt<string>> {
  return async () => {
    const { end, stdout } = await runExec(
      ctx.cluster,
      buildPodExec(ctx, POD_NAME, ["sh", "/knotless/helper.sh", "pack-outputs"]),
    );
    return isExecSuccess(end) ? { ok: true, value: stdout } : { ok: false, end };
  };
}

describe("withExecRetry", { concurrency: true }, () => {
  it("returns the attempt's value when the exec succeeds at once", async () => {
    const { ctx, kubectl, eventsOf } = buildTestContext();
    kubectl.on("exec", { stdout: "packed" });
    assert.equal(await withExecRetry(ctx, POD, "download", "download-failed", execAttempt(ctx)), "packed");
    assert.equal(kubectl.calls.length, 1);
    assert.deepEqual(eventsOf("notice"), []);
  });

  it("retries while the node refuses the exec upgrade, with a warning notice per retry", async () => {
    const { ctx, kubectl, eventsOf } = buildTestContext();
    kubectl.on("exec", [failure(UPGRADE_REFUSED), failure(DIALING_BACKEND), { stdout: "packed" }]);
    assert.equal(await withExecRetry(ctx, POD, "download", "download-failed", execAttempt(ctx)), "packed");
    assert.equal(kubectl.callsTo("exec").length, 3);
    assert.deepEqual(kubectl.callsTo("get pods"), [], "a refused upgrade says nothing about the pod");
    const notices = eventsOf("notice");
    assert.equal(notices.length, 2);
    assert.ok(notices.every((n) => n.level === "warning"));
    const { initialDelayMs, maxDelayMs } = ctx.timings.execReadyRetry;
    assert.match(
      notices[0]!.message,
      new RegExp(
        String.raw`^download: exec not ready \(attempt 1\): error: unable to upgrade connection: container not found \("run"\); retrying in ${initialDelayMs} ms$`,
      ),
    );
    assert.match(
      notices[1]!.message,
      new RegExp(
        String.raw`^download: exec not ready \(attempt 2\): Error from server: error dialing backend: .*; retrying in ${Math.min(initialDelayMs * 2, maxDelayMs)} ms$`,
      ),
    );
  });

  it("gives up with exec-failed when the exec stays refused past the budget", async () => {
    // The default waits: the test is about the budget they are measured against.
    const { ctx, kubectl, eventsOf } = buildTestContext({
      timings: { execReadyBudgetMs: 1400, execReadyRetry: DEFAULT_TIMINGS.execReadyRetry },
    });
    kubectl.on("exec", failure(UPGRADE_REFUSED));
    await assert.rejects(
      withExecRetry(ctx, POD, "upload", "exec-failed", execAttempt(ctx)),
      isInfraError(
        "exec-failed",
        /^upload: exec kept failing \(gave up after \d+ attempts? in [0-9.]+s, budget 1s\): error: unable to upgrade connection/,
      ),
    );
    // A 500 ms wait fits the 1.4 s budget, the 1000 ms wait after it does not; on a busy machine the first attempt may
    // take long enough that the 500 ms wait no longer fits either: one attempt (the message says "1 attempt").
    const execs = kubectl.callsTo("exec").length;
    assert.ok(execs >= 1 && execs <= 2, `${execs} execs`);
    assert.equal(eventsOf("notice").length, execs - 1);
  });

  it("treats any other failed exec as final, with the caller's reason and kubectl's exit code, once the pod is found alive", async () => {
    const { ctx, kubectl, eventsOf } = buildTestContext();
    kubectl.on(
      "exec",
      failure("tar: /outputs: Cannot open: Permission denied\ncommand terminated with exit code 2", 2),
    );
    kubectl.on("get pods", podList(runningPod()));
    await assert.rejects(
      withExecRetry(ctx, POD, "download", "download-failed", execAttempt(ctx)),
      isInfraError(
        "download-failed",
        /^download failed \(kubectl exit 2\): tar: \/outputs: Cannot open: Permission denied$/,
      ),
    );
    assert.deepEqual(
      kubectl.calls.map((c) => c.command[0] + (c.command[0] === "get" ? ` ${c.command[1]}` : "")),
      ["exec", "get pods"],
    );
    assert.deepEqual(eventsOf("notice"), []);
  });

  it("blames the lost pod instead of the exec when the pod is gone after a failure", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on(
      "exec",
      failure(
        "error: error reading from error stream: read tcp 10.0.0.2:5->10.0.0.1:443: read: connection reset by peer",
      ),
    );
    kubectl.on("get pods", podList(endedPod("Failed", "Evicted", "The node was low on resource: memory.")));
    await assert.rejects(
      withExecRetry(ctx, POD, "download", "download-failed", execAttempt(ctx)),
      isInfraError("pod-lost", /Evicted: The node was low on resource: memory\./),
    );
    assert.equal(kubectl.callsTo("exec").length, 1);
  });

  it("rethrows an InfraError thrown by the attempt when the pod is alive", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("get pods", podList(runningPod()));
    const thrown = new InfraError("integrity-mismatch", "the pod received 3 of 4 files");
    await assert.rejects(
      withExecRetry(ctx, POD, "upload", "exec-failed", async () => {
        throw thrown;
      }),
      (error) => error === thrown,
    );
    assert.equal(kubectl.callsTo("get pods").length, 1);
  });

  it("turns an InfraError thrown by the attempt into pod-lost when the pod is gone", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("get pods", podList());
    await assert.rejects(
      withExecRetry(ctx, POD, "upload", "exec-failed", async () => {
        throw new InfraError("integrity-mismatch", "the pod received 3 of 4 files");
      }),
      isInfraError("pod-lost", /is gone/),
    );
  });

  it("lets an error that is not an InfraError through as it is, even when the pod is gone", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("get pods", podList());
    const thrown = new RangeError("bug");
    await assert.rejects(
      withExecRetry(ctx, POD, "upload", "exec-failed", async () => {
        throw thrown;
      }),
      (error) => error === thrown,
    );
  });

  it("stops with CancelledError when the run is cancelled while it waits to retry", async () => {
    const { ctx, kubectl, cancel } = buildTestContext();
    const test = {
      ...ctx,
      emit: (event: Parameters<ExecutorContext["emit"]>[0]) => (ctx.emit(event), event.kind === "notice" && cancel()),
    };
    kubectl.on("exec", failure(UPGRADE_REFUSED));
    await assert.rejects(withExecRetry(test, POD, "upload", "exec-failed", execAttempt(test)), CancelledError);
    assert.equal(kubectl.callsTo("exec").length, 1);
  });

  it("does not read the pod when the exec failed because the run was cancelled", async () => {
    const { ctx, kubectl, cancel } = buildTestContext();
    kubectl.on("exec", () => (setImmediate(cancel), { hang: true }));
    kubectl.on("get pods", podList(runningPod()));
    await assert.rejects(withExecRetry(ctx, POD, "upload", "exec-failed", execAttempt(ctx)));
    assert.deepEqual(kubectl.calls[0]?.killSignals, ["SIGTERM"]);
    assert.deepEqual(kubectl.callsTo("get pods"), []);
  });

  it("stops with CancelledError when the run is cancelled during the exec", async () => {
    const { ctx, kubectl, cancel } = buildTestContext();
    kubectl.on("exec", () => (setImmediate(cancel), { hang: true }));
    await assert.rejects(withExecRetry(ctx, POD, "upload", "exec-failed", execAttempt(ctx)), CancelledError);
  });

  it("gives up at once with forbidden when the exec is refused, neither retrying nor reading the pod", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on(
      "exec",
      failure(
        'Error from server (Forbidden): pods "knotless-run-42-x7k2p" is forbidden: User "u" cannot create resource "pods/exec" in API group "" in the namespace "ci"',
      ),
    );
    await assert.rejects(
      withExecRetry(ctx, POD, "upload", "exec-failed", execAttempt(ctx)),
      isInfraError("forbidden", /^upload: Error from server \(Forbidden\).*cannot create resource "pods\/exec"/),
    );
    assert.equal(kubectl.callsTo("exec").length, 1);
    assert.equal(kubectl.callsTo("get pods").length, 0);
  });
});
