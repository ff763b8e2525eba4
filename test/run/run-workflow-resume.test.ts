// Tests a resumed runWorkflow: it attaches instead of setting up, skips what its checkpoint says is done, follows the step from its offsets, and writes checkpoints as it goes.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InfraError } from "../../src/core/errors.js";
import { Kubectl } from "../../src/cluster/kubectl/kubectl.js";
import { KubectlCluster } from "../../src/cluster/kubectl/kubectl-cluster.js";
import type { RunEvent } from "../../src/events/run-events.js";
import type { LogFileProgress } from "../../src/events/sinks.js";
import type { RunCheckpoint } from "../../src/run/run-checkpoint.js";
import { buildSkippedStep } from "../../src/run/run-result.js";
import { runWorkflow } from "../../src/run/run-workflow.js";
import { exampleSettings } from "../support/example-settings.js";
import { SCRIPTED_POD, ScriptedExecutor, type ExecutorScript } from "../support/scripted-executor.js";

const NO_CLUSTER = new KubectlCluster(
  new Kubectl({
    binary: "kubectl",
    spawn: () => {
      throw new Error("this test spawns no kubectl");
    },
  }),
  {},
);

/** A log file whose every write has landed. */
const WRITTEN: LogFileProgress = { queuedLength: () => 0, holding: () => false, whenWritten: async () => true };

function checkpoint(over: Partial<RunCheckpoint>): RunCheckpoint {
  return {
    version: 1,
    runId: "42",
    startedAt: new Date(Date.now() - 5000).toISOString(),
    namespace: "ci",
    pod: SCRIPTED_POD,
    capacity: "warm",
    podWaitMs: 321,
    phase: "steps",
    status: "success",
    steps: [
      {
        name: "build",
        status: "success",
        exitCode: 0,
        startedAt: "2026-12-07T10:00:00.000Z",
        finishedAt: "2026-12-07T10:00:01.000Z",
        durationMs: 1000,
        timedOut: false,
      },
      buildSkippedStep("test"),
      buildSkippedStep("package"),
    ],
    step: { index: 1, startedAt: new Date(Date.now() - 2000).toISOString(), offsets: { stdout: 40, stderr: 3 } },
    caches: null,
    cachesSaved: 0,
    outputs: null,
    artifacts: [],
    logCounts: { limitBytes: 1 << 20, keptBytes: 43, droppedBytes: 0 },
    logs: { runLog: 100, ndjson: 200 },
    ...over,
  };
}

/** The pod as a runner stopped during step 2 (index 1) leaves it: step 1 ended, step 2 running, no secret. */
const STEP_2_RUNNING: ExecutorScript = {
  attach: async () => ({
    pod: SCRIPTED_POD,
    state: {
      uploaded: true,
      secrets: false,
      outputsPacked: false,
      steps: new Map([
        [0, { kind: "exit", code: 0 }],
        [1, { kind: "running" }],
      ]),
    },
    secrets: [],
  }),
};

async function resume(
  from: RunCheckpoint | undefined,
  script: ExecutorScript = STEP_2_RUNNING,
  secretNames: string[] = [],
) {
  const events: RunEvent[] = [];
  const saved: RunCheckpoint[] = [];
  let executor: ScriptedExecutor | undefined;
  const result = await runWorkflow({
    settings: { ...exampleSettings({ steps: ["build", "test", "package"] }), checkoutDir: "/nonexistent" },
    cluster: NO_CLUSTER,
    signal: new AbortController().signal,
    sinks: [(event) => events.push(event)],
    createExecutor: (ctx) => (executor = new ScriptedExecutor(ctx, script)),
    checkpoints: { store: { save: (c) => saved.push(c) }, logs: [WRITTEN, WRITTEN] },
    resume: { checkpoint: from, secretNames },
  });
  return { result, events, saved, executor: executor! };
}

describe("runWorkflow resumed from a checkpoint", () => {
  it("attaches instead of setting up, follows the step from its offsets without a second step-start, runs the rest, and reports the capacity and budget it had", async () => {
    const { result, events, executor } = await resume(checkpoint({}));
    assert.deepEqual(executor.calls, ["attach", "runStep 1 from 40/3", "runStep 2", "copyOut", "teardown"]);
    assert.equal(result.status, "success");
    assert.deepEqual(
      result.steps.map((step) => [step.name, step.status]),
      [
        ["build", "success"],
        ["test", "success"],
        ["package", "success"],
      ],
    );
    assert.equal(result.capacity, "warm");
    assert.equal(result.podWaitMs, 321);
    assert.equal(result.logs.keptBytes, 43);
    assert.deepEqual(
      events.filter((e) => e.kind === "step-start").map((e) => (e.kind === "step-start" ? e.index : -1)),
      [2],
    );
    assert.equal(events.filter((e) => e.kind === "run-start").length, 0, "the log has its run-start already");
    const notices = events.filter((e) => e.kind === "notice" && /re-attached to pod/.test(e.message));
    assert.equal(notices.length, 1);
  });

  it("skips the phases its checkpoint says are done: at the outputs, only the download and teardown", async () => {
    const { executor, result } = await resume(
      checkpoint({
        phase: "outputs",
        step: null,
        steps: ["build", "test", "package"].map((name) => ({ ...checkpoint({}).steps[0]!, name })),
      }),
    );
    assert.deepEqual(executor.calls, ["attach", "copyOut", "teardown"]);
    assert.equal(result.status, "success");
  });

  it("masks the secrets the pod gave back, in step output after the re-attach", async () => {
    const { events } = await resume(
      checkpoint({}),
      {
        attach: async () => ({
          pod: SCRIPTED_POD,
          state: { uploaded: true, secrets: true, outputsPacked: false, steps: new Map([[1, { kind: "running" }]]) },
          secrets: [{ name: "TOKEN", value: "from-the-pod-secret" }],
        }),
        runStep: async (index, _deadline, ctx) => {
          ctx.emit({ kind: "step-output", index, stream: "stdout", text: "token from-the-pod-secret\n" });
          return { status: "success", exitCode: 0, timedOut: false };
        },
      },
      ["TOKEN"],
    );
    const output = events.flatMap((e) => (e.kind === "step-output" ? [e.text] : [])).join("");
    assert.ok(!output.includes("from-the-pod-secret"), output);
    assert.match(output, /token \*\*\*/);
  });

  it("ends the run failed, runner-lost, when the pod no longer holds the secrets its remaining steps need", async () => {
    const { result, executor } = await resume(checkpoint({}), STEP_2_RUNNING, ["TOKEN"]);
    assert.equal(result.status, "failed");
    assert.equal(result.errorReason, "runner-lost");
    assert.match(result.error ?? "", /no longer holds the run's secrets/);
    assert.deepEqual(executor.calls, ["attach", "teardown"]);
  });

  it("writes a checkpoint before each step it starts, and one at the outputs", async () => {
    const { saved } = await resume(checkpoint({}));
    assert.deepEqual(
      saved.map((c) => [c.phase, c.step?.index ?? null, c.step?.offsets ?? null]),
      [
        ["steps", 1, { stdout: 40, stderr: 3 }],
        ["steps", 2, null],
        ["outputs", null, null],
        ["teardown", null, null],
      ],
    );
  });

  it("ends a run stopped during its teardown with the verdict its checkpoint holds when its Job is gone already", async () => {
    const { result, executor, events } = await resume(
      checkpoint({
        phase: "teardown",
        step: null,
        status: "failed",
        error: { message: "step 2 exited 3", reason: "step-failed" },
        steps: ["build", "test", "package"].map((name) => ({ ...checkpoint({}).steps[0]!, name })),
      }),
      {
        attach: () =>
          Promise.reject(
            new InfraError(
              "runner-lost",
              "the runner stopped and its run could not be re-attached to: its Job knotless-run-42 is gone",
            ),
          ),
      },
    );
    assert.deepEqual(executor.calls, ["attach", "teardown"]);
    assert.equal(result.status, "failed");
    assert.equal(result.error, "step 2 exited 3");
    assert.ok(events.some((e) => e.kind === "notice" && /stopped during the run's teardown/.test(e.message)));
  });
});
