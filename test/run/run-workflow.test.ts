import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { CancelledError, InfraError, InputError } from "../../src/core/errors.js";
import type { RunEvent } from "../../src/events/run-events.js";
import type { ExecutorTimings } from "../../src/executor/kubernetes/context.js";
import { Kubectl } from "../../src/cluster/kubectl/kubectl.js";
import { KubectlCluster } from "../../src/cluster/kubectl/kubectl-cluster.js";
import type { RunResult } from "../../src/run/run-result.js";
import { runWorkflow, type RunWorkflowOptions } from "../../src/run/run-workflow.js";
import { exampleSettings } from "../support/example-settings.js";
import {
  EMPTY_REPORT,
  SCRIPTED_POD,
  STEP_SUCCEEDED,
  ScriptedExecutor,
  untilAborted,
  type ExecutorScript,
} from "../support/scripted-executor.js";

/** A cluster over a kubectl that must never be spawned: the scripted executor stands in for the cluster. */
const NO_CLUSTER = new KubectlCluster(
  new Kubectl({
    binary: "kubectl",
    spawn: () => {
      throw new Error("this test spawns no kubectl");
    },
  }),
  {},
);

interface ScriptedRun {
  readonly result: RunResult;
  readonly events: RunEvent[];
  readonly executor: ScriptedExecutor;
}

/** A real checkout for the run's scan phase: two files and a directory. */
let checkout = "";

before(async () => {
  checkout = await mkdtemp(join(tmpdir(), "knotless-run-workflow-"));
  await mkdir(join(checkout, "src"));
  await writeFile(join(checkout, "README"), "readme\n");
  await writeFile(join(checkout, "src", "main.c"), "int main;\n");
});

after(async () => {
  await rm(checkout, { recursive: true, force: true });
});

async function runScripted(
  script: ExecutorScript,
  options: {
    settings?: Partial<RunWorkflowOptions["settings"]>;
    timings?: Partial<ExecutorTimings>;
    signal?: AbortSignal;
    forceSignal?: AbortSignal;
    onEvent?: (event: RunEvent) => void;
  } = {},
): Promise<ScriptedRun> {
  const events: RunEvent[] = [];
  let executor: ScriptedExecutor | undefined;
  const result = await runWorkflow({
    settings: {
      ...exampleSettings({ steps: ["build", "test", "package"] }),
      checkoutDir: checkout,
      ...options.settings,
    },
    cluster: NO_CLUSTER,
    signal: options.signal ?? new AbortController().signal,
    ...(options.forceSignal ? { forceSignal: options.forceSignal } : {}),
    sinks: [(event) => events.push(event), ...(options.onEvent ? [options.onEvent] : [])],
    ...(options.timings ? { timings: options.timings } : {}),
    createExecutor: (ctx) => (executor = new ScriptedExecutor(ctx, script)),
  });
  assert.ok(executor, "runWorkflow made no executor");
  return { result, events, executor };
}

function stepStatuses(result: RunResult): string[] {
  return result.steps.map((step) => step.status);
}

/** Teardown ran exactly once, after everything else. */
function assertTornDownOnceAtTheEnd(executor: ScriptedExecutor): void {
  assert.equal(executor.calls.filter((call) => call === "teardown").length, 1, `calls: ${executor.calls.join(", ")}`);
  assert.equal(executor.calls.at(-1), "teardown");
}

describe("runWorkflow", () => {
  it("masks the run's secrets in step output split across chunks and in the result's error before any sink sees them", async () => {
    const secret = "s3cr3t-Value/42";
    const { result, events } = await runScripted(
      {
        runStep: async (index, _deadline, ctx) => {
          for (const piece of [
            "echo ",
            secret.slice(0, 5),
            secret.slice(5),
            " and ",
            Buffer.from(secret).toString("base64"),
            "\n",
          ])
            ctx.emit({ kind: "step-output", index, stream: "stdout", text: piece });
          if (index === 1) throw new InfraError("exec-failed", `kubectl said ${secret}`);
          return STEP_SUCCEEDED;
        },
      },
      { settings: { secrets: [{ name: "TOKEN", value: secret }] } },
    );
    const text = events.map((event) => (event.kind === "step-output" ? event.text : "")).join("");
    assert.equal(text, "echo *** and ***\n".repeat(2));
    assert.doesNotMatch(JSON.stringify(events), /s3cr3t/);
    assert.equal(result.error, "kubectl said ***");
  });

  it("calls setup, copyIn, every step in order, copyOut and teardown, and reports success with exit code 0", async () => {
    const { result, executor } = await runScripted({});
    assert.deepEqual(executor.calls, ["setup", "copyIn", "runStep 0", "runStep 1", "runStep 2", "copyOut", "teardown"]);
    assert.equal(result.status, "success");
    assert.equal(result.exitCode, 0);
    assert.equal(result.error, null);
    assert.deepEqual(stepStatuses(result), ["success", "success", "success"]);
    assert.deepEqual(result.job, {
      namespace: "ci",
      name: "knotless-run-42",
      pod: SCRIPTED_POD.name,
      node: SCRIPTED_POD.node,
      image: "busybox:1.36",
    });
  });

  it("ends the run at the first failing step, records its exit code, skips the rest and still downloads the outputs", async () => {
    const { result, executor } = await runScripted({
      runStep: async (index) => (index === 1 ? { status: "failed", exitCode: 3, timedOut: false } : STEP_SUCCEEDED),
    });
    assert.deepEqual(executor.calls, ["setup", "copyIn", "runStep 0", "runStep 1", "copyOut", "teardown"]);
    assert.equal(result.status, "failed");
    assert.equal(result.exitCode, 3);
    assert.equal(result.error, null);
    assert.deepEqual(stepStatuses(result), ["success", "failed", "skipped"]);
    assert.equal(result.steps[1]?.exitCode, 3);
    assert.deepEqual(result.steps[2], {
      name: "package",
      status: "skipped",
      exitCode: null,
      startedAt: null,
      finishedAt: null,
      durationMs: 0,
      timedOut: false,
    });
  });

  it("reports a timed-out step as status timeout with exit code -1 and skips the steps after it", async () => {
    const { result } = await runScripted({
      runStep: async (index) => (index === 0 ? { status: "timeout", exitCode: null, timedOut: true } : STEP_SUCCEEDED),
    });
    assert.equal(result.status, "timeout");
    assert.equal(result.exitCode, -1);
    assert.deepEqual(stepStatuses(result), ["timeout", "skipped", "skipped"]);
    assert.equal(result.steps[0]?.timedOut, true);
  });

  it("tears down after a failed setup, runs nothing else and reports the infrastructure reason with exit code -1", async () => {
    const { result, executor } = await runScripted({
      setup: async () => {
        throw new InfraError("image-pull", "image busybox:nope cannot be pulled: ErrImagePull");
      },
    });
    assert.deepEqual(executor.calls, ["setup", "teardown"]);
    assert.equal(result.status, "failed");
    assert.equal(result.exitCode, -1);
    assert.equal(result.errorReason, "image-pull");
    assert.match(result.error ?? "", /ErrImagePull/);
    assert.deepEqual(stepStatuses(result), ["skipped", "skipped", "skipped"]);
    assert.equal(result.job.pod, null);
  });

  it("records a checkout that cannot be packed as an input failure, and tears down", async () => {
    const { result, executor } = await runScripted({
      copyIn: async () => {
        throw new InputError("cannot pack the files to upload: EACCES: permission denied, open '/tmp/checkout/secret'");
      },
    });
    assert.deepEqual(executor.calls, ["setup", "copyIn", "teardown"]);
    assert.equal(result.status, "failed");
    assert.equal(result.errorReason, "input");
    assert.deepEqual(stepStatuses(result), ["skipped", "skipped", "skipped"]);
  });

  it("scans the checkout and shared steps before setup and hands the scans to copyIn", async () => {
    const shared = await mkdtemp(join(tmpdir(), "knotless-run-workflow-shared-"));
    try {
      await writeFile(join(shared, "lint.sh"), "true\n");
      const { result, events, executor } = await runScripted({}, { settings: { sharedStepsDir: shared } });
      assert.equal(result.status, "success");
      const kinds = events.map((event) =>
        event.kind === "phase-start" || event.kind === "phase-end" ? `${event.kind} ${event.phase}` : event.kind,
      );
      assert.deepEqual(kinds.slice(0, 3), ["run-start", "phase-start scan", "phase-end scan"]);
      const scanned = events.find((event) => event.kind === "phase-end" && event.phase === "scan");
      assert.equal(
        scanned?.kind === "phase-end" && scanned.detail,
        "checkout 3 entries (2 files, 1 directory, 0 symlinks); shared steps 1 entry (1 file, 0 directories, 0 symlinks)",
      );
      assert.equal(executor.trees?.work.entries, 3);
      assert.equal(executor.trees?.steps?.files, 1);
    } finally {
      await rm(shared, { recursive: true, force: true });
    }
  });

  it("fails as bad input before setup when the checkout cannot be scanned: only teardown runs, which has no Job to delete", async () => {
    const missing = join(checkout, "no-such-dir");
    const { result, events, executor } = await runScripted({}, { settings: { checkoutDir: missing } });
    assert.deepEqual(executor.calls, ["teardown"]);
    assert.equal(result.status, "failed");
    assert.equal(result.errorReason, "input");
    assert.equal(result.error, `cannot upload ${missing}: ENOENT: no such file or directory`);
    assert.ok(events.some((event) => event.kind === "phase-end" && event.phase === "scan" && !event.ok));
    assert.deepEqual(stepStatuses(result), ["skipped", "skipped", "skipped"]);
  });

  it("reports a failed download after passing steps as an infrastructure failure, keeping the steps' results", async () => {
    const { result, executor } = await runScripted({
      copyOut: async () => {
        throw new InfraError("download-failed", "outputs download failed: the archive was cut");
      },
    });
    assertTornDownOnceAtTheEnd(executor);
    assert.equal(result.status, "failed");
    assert.equal(result.errorReason, "download-failed");
    assert.equal(result.exitCode, -1);
    assert.deepEqual(stepStatuses(result), ["success", "success", "success"]);
  });

  it("cancels mid-step when the caller aborts: the running step is cancelled, the rest skipped, teardown runs", async () => {
    const controller = new AbortController();
    const { result, executor, events } = await runScripted(
      { runStep: async (index, _deadline, ctx) => (index === 1 ? untilAborted(ctx.signal) : STEP_SUCCEEDED) },
      {
        signal: controller.signal,
        onEvent: (event) => {
          if (event.kind === "step-start" && event.index === 1) controller.abort(new Error("SIGTERM received"));
        },
      },
    );
    assert.deepEqual(
      executor.calls,
      ["setup", "copyIn", "runStep 0", "runStep 1", "copyOut", "teardown"],
      "what the steps wrote is collected before teardown",
    );
    assert.equal(result.status, "cancelled");
    assert.equal(result.exitCode, -1);
    assert.equal(result.errorReason, "cancelled");
    assert.equal(result.error, "SIGTERM received");
    assert.deepEqual(stepStatuses(result), ["success", "cancelled", "skipped"]);
    const cancelled = result.steps[1]!;
    assert.equal(cancelled.exitCode, null);
    assert.ok(cancelled.startedAt !== null && cancelled.finishedAt !== null, "the cancelled step has both times");
    const ends = events
      .filter((event) => event.kind === "step-end")
      .map((event) => (event.kind === "step-end" ? `${event.index} ${event.status}` : ""));
    assert.deepEqual(ends, ["0 success", "1 cancelled"]);
  });

  it("does not start a step once the caller has cancelled between steps", async () => {
    const controller = new AbortController();
    const { result, executor } = await runScripted(
      {
        runStep: async (index) => {
          if (index === 0) controller.abort();
          return STEP_SUCCEEDED;
        },
      },
      { signal: controller.signal },
    );
    assert.deepEqual(executor.calls, ["setup", "copyIn", "runStep 0", "copyOut", "teardown"]);
    assert.equal(result.status, "cancelled");
    assert.deepEqual(stepStatuses(result), ["success", "skipped", "skipped"]);
  });

  it("collects no outputs when the cancel comes before any step ran", async () => {
    const controller = new AbortController();
    const { result, executor } = await runScripted(
      { copyIn: (ctx) => (controller.abort(), untilAborted(ctx.signal)) },
      { signal: controller.signal },
    );
    assert.deepEqual(executor.calls, ["setup", "copyIn", "teardown"]);
    assert.equal(result.status, "cancelled");
  });

  it("reports the outputs collected after a cancel in the result, and a failure to collect them as a warning", async () => {
    const controller = new AbortController();
    const file = { path: "partial.txt", size: 3, sha256: "0".repeat(64) };
    const collected = await runScripted(
      {
        runStep: (_index, _deadline, ctx) => (controller.abort(), untilAborted(ctx.signal)),
        copyOut: async () => ({ ...EMPTY_REPORT, files: [file], entries: 1 }),
      },
      { signal: controller.signal },
    );
    assert.equal(collected.result.status, "cancelled");
    assert.deepEqual(
      [...collected.result.outputs].map((o) => o.path),
      ["partial.txt"],
    );
    const again = new AbortController();
    const failed = await runScripted(
      {
        runStep: (_index, _deadline, ctx) => (again.abort(), untilAborted(ctx.signal)),
        copyOut: async () => {
          throw new InfraError("download-failed", "the archive was cut");
        },
      },
      { signal: again.signal },
    );
    assert.equal(failed.result.status, "cancelled");
    assert.equal(failed.result.errorReason, "cancelled", "the cancel stays the verdict");
    assert.ok(
      failed.events.some(
        (e) =>
          e.kind === "notice" &&
          e.level === "warning" &&
          /outputs could not be collected after the cancel: the archive was cut/.test(e.message),
      ),
    );
  });

  it("cancels the run when the executor asks for it (a cancel requested through the cluster), with its reason", async () => {
    const { result, executor } = await runScripted({
      runStep: async (index, _deadline, ctx) => {
        if (index === 0) return STEP_SUCCEEDED;
        ctx.requestCancel(
          new CancelledError("cancel requested through the cluster by 7@elsewhere at 2026-01-01T00:00:00.000Z"),
        );
        return untilAborted(ctx.signal);
      },
    });
    assert.deepEqual(executor.calls, ["setup", "copyIn", "runStep 0", "runStep 1", "copyOut", "teardown"]);
    assert.equal(result.status, "cancelled");
    assert.equal(result.error, "cancel requested through the cluster by 7@elsewhere at 2026-01-01T00:00:00.000Z");
  });

  it("hands the executor a clean-up signal after a cancel that the force signal cuts short", async () => {
    const controller = new AbortController();
    const force = new AbortController();
    let cleanup: AbortSignal | undefined;
    await runScripted(
      {
        runStep: (_index, _deadline, ctx) => (controller.abort(), untilAborted(ctx.signal)),
        copyOut: async (ctx) => {
          cleanup = ctx.cleanupSignal();
          assert.equal(cleanup.aborted, false);
          assert.equal(ctx.cleanupSignal(), cleanup, "the same signal on every call");
          force.abort();
          return EMPTY_REPORT;
        },
      },
      { signal: controller.signal, forceSignal: force.signal },
    );
    assert.equal(cleanup?.aborted, true);
  });

  it("stops an upload that outlives the run's timeout and reports status timeout with reason run-timeout", async () => {
    const { result, executor } = await runScripted(
      { copyIn: (ctx) => untilAborted(ctx.signal) },
      { settings: { timeoutMs: 50 }, timings: { runDeadlineGraceMs: 0, killGraceSeconds: 0 } },
    );
    assert.deepEqual(executor.calls, ["setup", "copyIn", "teardown"]);
    assert.equal(result.status, "timeout");
    assert.equal(result.errorReason, "run-timeout");
    assert.deepEqual(stepStatuses(result), ["skipped", "skipped", "skipped"]);
  });

  it("starts no step after the run's timeout has passed and reports status timeout", async () => {
    const { result, executor } = await runScripted(
      {
        runStep: async () => {
          await sleep(120);
          return STEP_SUCCEEDED;
        },
      },
      { settings: { timeoutMs: 60 }, timings: { runDeadlineGraceMs: 60_000 } },
    );
    assert.deepEqual(executor.calls, ["setup", "copyIn", "runStep 0", "copyOut", "teardown"]);
    assert.equal(result.status, "timeout");
    assert.deepEqual(stepStatuses(result), ["success", "skipped", "skipped"]);
  });

  it("gives each step the earlier of its own timeout and the run's deadline", async () => {
    const before = Date.now();
    const { executor } = await runScripted({}, { settings: { stepTimeoutMs: 5_000, timeoutMs: 3_600_000 } });
    const after = Date.now();
    for (const index of [0, 1, 2]) {
      const deadline = executor.deadlines.get(index)!;
      assert.ok(
        deadline >= before + 5_000 && deadline <= after + 5_000,
        `step ${index}: deadline ${deadline - before} ms after the start`,
      );
    }
    const short = await runScripted({}, { settings: { stepTimeoutMs: 3_600_000, timeoutMs: 10_000 } });
    const runDeadline = short.executor.deadlines.get(0)!;
    assert.equal(
      short.executor.deadlines.get(2),
      runDeadline,
      "every step shares the run's deadline when it comes first",
    );
  });

  it("gives a step with its own timeout that budget instead of the run's step timeout", async () => {
    const steps = exampleSettings({ steps: ["build", "test", "package"] }).steps.map((step, index) =>
      index === 1 ? { ...step, timeoutMs: 60_000 } : step,
    );
    const before = Date.now();
    const { executor } = await runScripted({}, { settings: { steps, stepTimeoutMs: 5_000, timeoutMs: 3_600_000 } });
    const after = Date.now();
    const offsets = [0, 1, 2].map((index) => executor.deadlines.get(index)!);
    assert.ok(
      offsets[1]! >= before + 60_000 && offsets[1]! <= after + 60_000,
      `step 2: deadline ${offsets[1]! - before} ms after the start`,
    );
    for (const index of [0, 2])
      assert.ok(offsets[index]! <= after + 5_000, `step ${index + 1} keeps the run's step timeout`);
    const bounded = await runScripted({}, { settings: { steps, timeoutMs: 10_000 } });
    assert.ok(
      bounded.executor.deadlines.get(1)! <= Date.now() + 10_000,
      "a step's own timeout never outlasts the run's deadline",
    );
  });

  it("records a step whose time ran out as timed out when stopping it fails, and fails the run on that error", async () => {
    const { result, events } = await runScripted(
      {
        runStep: async (_index, deadlineAt) => {
          await sleep(Math.max(0, deadlineAt - Date.now()) + 20);
          throw new InfraError(
            "exec-failed",
            "step 1 (build) timed out and its processes in the pod could not be confirmed stopped",
          );
        },
      },
      { settings: { stepTimeoutMs: 50 } },
    );
    assert.equal(result.status, "failed");
    assert.equal(result.errorReason, "exec-failed");
    assert.deepEqual(stepStatuses(result), ["timeout", "skipped", "skipped"]);
    assert.equal(result.steps[0]?.timedOut, true);
    assert.equal(result.steps[0]?.exitCode, null);
    assert.equal(events.filter((event) => event.kind === "step-end").length, 1);
  });

  it("records a step that fails on the infrastructure before its time is up as failed", async () => {
    const { result } = await runScripted({
      runStep: async () => {
        throw new InfraError("pod-lost", "pod knotless-run-42-abcde is gone");
      },
    });
    assert.equal(result.errorReason, "pod-lost");
    assert.deepEqual(stepStatuses(result), ["failed", "skipped", "skipped"]);
    assert.equal(result.steps[0]?.timedOut, false);
  });

  it("resolves with status failed and reason internal when the executor throws something unexpected, after teardown", async () => {
    const { result, executor } = await runScripted({
      runStep: async () => {
        throw new TypeError("cannot read properties of undefined");
      },
    });
    assertTornDownOnceAtTheEnd(executor);
    assert.equal(result.status, "failed");
    assert.equal(result.errorReason, "internal");
    assert.match(result.error ?? "", /^internal error: cannot read properties of undefined/);
    assert.deepEqual(stepStatuses(result), ["failed", "skipped", "skipped"]);
  });

  it("emits run-start first and run-end last, with the result's status and exit code", async () => {
    const { result, events } = await runScripted({
      runStep: async (index) => (index === 2 ? { status: "failed", exitCode: 7, timedOut: false } : STEP_SUCCEEDED),
    });
    assert.equal(events[0]?.kind, "run-start");
    const last = events.at(-1);
    assert.equal(last?.kind, "run-end");
    assert.equal(last?.kind === "run-end" && last.status, result.status);
    assert.equal(last?.kind === "run-end" && last.exitCode, 7);
    const starts = events.filter((event) => event.kind === "step-start").length;
    const ends = events.filter((event) => event.kind === "step-end").length;
    assert.equal(starts, 3);
    assert.equal(ends, 3);
  });

  it("turns a success into a teardown failure when the Job is left behind, naming the command that deletes it", async () => {
    const detail =
      "could not delete Job knotless-run-42: Forbidden; delete it with: kubectl delete job knotless-run-42 --cascade=background";
    const { result } = await runScripted({ teardown: async () => ({ deleted: false, leftBehind: true, detail }) });
    assert.equal(result.status, "failed");
    assert.equal(result.errorReason, "teardown-failed");
    assert.equal(result.error, detail);
    assert.equal(result.exitCode, -1);
    assert.deepEqual(stepStatuses(result), ["success", "success", "success"]);
  });

  it("fails a run whose Job is left because the delete was refused with the refusal's reason, forbidden", async () => {
    const detail =
      'could not delete Job knotless-run-42: Error from server (Forbidden): jobs.batch "knotless-run-42" is forbidden; delete it with: kubectl delete job knotless-run-42';
    const { result } = await runScripted({
      teardown: async () => ({ deleted: false, leftBehind: true, detail, reason: "forbidden" }),
    });
    assert.equal(result.status, "failed");
    assert.equal(result.errorReason, "forbidden");
    assert.equal(result.error, detail);
  });

  it("keeps the first error of a failed run and adds the Job left behind to its message", async () => {
    const { result } = await runScripted({
      setup: async () => {
        throw new InfraError("pod-timeout", "the pod was not running after 15m");
      },
      teardown: async () => ({
        deleted: false,
        leftBehind: true,
        detail: "could not delete Job knotless-run-42: Forbidden",
      }),
    });
    assert.equal(result.errorReason, "pod-timeout");
    assert.equal(
      result.error,
      "the pod was not running after 15m; also: could not delete Job knotless-run-42: Forbidden",
    );
  });

  it("reports a kept Job as no failure", async () => {
    const { result } = await runScripted(
      { teardown: async () => ({ deleted: false, leftBehind: false, detail: "kept Job knotless-run-42 (--keep)" }) },
      { settings: { keep: true } },
    );
    assert.equal(result.status, "success");
    assert.equal(result.error, null);
  });

  it("warns about each refused output and about the size limit, and puts the refused entries in the result", async () => {
    const { result, events } = await runScripted({
      copyOut: async () => ({
        ...EMPTY_REPORT,
        refused: [{ path: "../escape", reason: "path leaves the outputs directory" }],
        limitReached: true,
      }),
    });
    const warnings = events
      .filter((event) => event.kind === "notice" && event.level === "warning")
      .map((event) => (event.kind === "notice" ? event.message : ""));
    assert.ok(
      warnings.some((message) => message.includes("refused output ../escape: path leaves the outputs directory")),
      warnings.join("\n"),
    );
    assert.ok(
      warnings.some((message) => message.includes("outputs stopped at the limit")),
      warnings.join("\n"),
    );
    assert.deepEqual(result.refusedOutputs, [{ path: "../escape", reason: "path leaves the outputs directory" }]);
  });

  it("keeps step output within settings.maxLogBytes for every sink alike, says so once and reports the counts in the result", async () => {
    const second: RunEvent[] = [];
    const { result, events } = await runScripted(
      {
        runStep: async (index, _deadline, ctx) => {
          for (let i = 0; i < 10; i += 1)
            ctx.emit({ kind: "step-output", index, stream: "stdout", text: `step ${index} line ${i}\n` }); // 14 bytes a line
          return STEP_SUCCEEDED;
        },
      },
      { settings: { maxLogBytes: 200 }, onEvent: (event) => second.push(event) },
    );
    assert.deepEqual(second, events, "every sink sees the same events");
    const kept = events.map((event) => (event.kind === "step-output" ? event.text : "")).join("");
    assert.equal(Buffer.byteLength(kept), 200);
    assert.ok(kept.endsWith("step 1 line 2\nstep 1 line 3\nstep"), JSON.stringify(kept.slice(-40)));
    const limitNotices = events.filter(
      (event) => event.kind === "notice" && event.message.startsWith("step output reached the log limit"),
    );
    assert.equal(limitNotices.length, 1);
    assert.deepEqual(
      events.filter((event) => event.kind === "step-end").map((event) => event.kind === "step-end" && event.status),
      ["success", "success", "success"],
      "the steps ran on",
    );
    assert.deepEqual(result.logs, { limitBytes: 200, keptBytes: 200, droppedBytes: 3 * 140 - 200 });
  });

  it("keeps up to 64 MiB of step output when settings.maxLogBytes is absent", async () => {
    const { result } = await runScripted({});
    assert.deepEqual(result.logs, { limitBytes: 64 * 1024 * 1024, keptBytes: 0, droppedBytes: 0 });
  });
});

describe("runWorkflow with a git checkout", () => {
  const gitCheckout = { url: "git://git.example/repo", sha: "a".repeat(40), depth: 3, submodules: true };

  /** A scripted executor whose pod has git (or not), recording the in-pod clone. */
  class GitExecutor extends ScriptedExecutor {
    constructor(
      ctx: ConstructorParameters<typeof ScriptedExecutor>[0],
      readonly podHasGit: boolean,
      readonly cloneFails = false,
    ) {
      super(ctx, {});
    }
    async hasGit(): Promise<boolean> {
      this.calls.push("hasGit");
      return this.podHasGit;
    }
    async cloneCheckout(spec: { url: string; sha: string; depth: number; submodules: boolean }): Promise<void> {
      this.calls.push(
        `cloneCheckout ${spec.url} ${spec.sha.slice(0, 7)} depth=${spec.depth} submodules=${spec.submodules}`,
      );
      if (this.cloneFails)
        throw new InfraError("checkout-failed", "git fetch failed in the pod (exit 128): fatal: not our ref");
    }
  }

  async function runWithGit(
    podHasGit: boolean,
    cloneFails = false,
  ): Promise<{ result: RunResult; executor: GitExecutor; events: RunEvent[] }> {
    const empty = await mkdtemp(join(tmpdir(), "knotless-run-git-"));
    const events: RunEvent[] = [];
    let executor: GitExecutor | undefined;
    const result = await runWorkflow({
      settings: { ...exampleSettings({ steps: ["build"] }), checkoutDir: empty, gitCheckout },
      cluster: NO_CLUSTER,
      signal: new AbortController().signal,
      sinks: [(event) => events.push(event)],
      createExecutor: (ctx) => (executor = new GitExecutor(ctx, podHasGit, cloneFails)),
    });
    await rm(empty, { recursive: true, force: true });
    return { result, executor: executor!, events };
  }

  it("asks the pod for git after setup, uploads the empty checkout, then clones in the pod before the first step", async () => {
    const { result, executor } = await runWithGit(true);
    assert.equal(result.status, "success");
    assert.deepEqual(executor.calls, [
      "setup",
      "hasGit",
      "copyIn",
      `cloneCheckout git://git.example/repo aaaaaaa depth=3 submodules=true`,
      "runStep 0",
      "copyOut",
      "teardown",
    ]);
    assert.equal(executor.trees?.work.files, 0);
  });

  it("fails the run as checkout-failed when the pod's clone fails, with no step run and the Job torn down", async () => {
    const { result, executor } = await runWithGit(true, true);
    assert.equal(result.status, "failed");
    assert.equal(result.errorReason, "checkout-failed");
    assert.match(result.error ?? "", /git fetch failed in the pod/);
    assert.equal(result.steps[0]!.status, "skipped");
    assert.equal(executor.calls.at(-1), "teardown");
    assert.ok(!executor.calls.includes("runStep 0"));
  });

  it("clones on the host when the image has no git and no host git is set: checkout-failed, saying both, in the clone phase", async () => {
    const { result, executor, events } = await runWithGit(false);
    assert.equal(result.errorReason, "checkout-failed");
    assert.deepEqual(executor.calls, ["setup", "hasGit", "teardown"]);
    const end = events.find((event) => event.kind === "phase-end" && event.phase === "clone");
    assert.ok(
      end?.kind === "phase-end" && !end.ok && /the image has no git and this runner has no git/.test(end.detail),
    );
  });
});
