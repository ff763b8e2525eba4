// Tests the resume planner: where a re-attached run goes on, given its checkpoint (or none) and what its pod shows.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parsePodRunState, type PodRunState } from "../../src/pod/pod-run-state.js";
import { planResume, type ResumeInput } from "../../src/run/plan-resume.js";
import type { RunCheckpoint } from "../../src/run/run-checkpoint.js";
import { buildSkippedStep } from "../../src/run/run-result.js";

const state = (text: string): PodRunState => parsePodRunState(text);

function checkpoint(over: Partial<RunCheckpoint> = {}): RunCheckpoint {
  return {
    version: 1,
    runId: "r1",
    startedAt: "2026-12-07T10:00:00.000Z",
    namespace: "ci",
    pod: { name: "pod-1", node: "node-1" },
    capacity: "cold",
    podWaitMs: 900,
    phase: "steps",
    status: "success",
    steps: [buildSkippedStep("a"), buildSkippedStep("b")],
    step: { index: 0, startedAt: "2026-12-07T10:00:05.000Z", offsets: { stdout: 120, stderr: 0 } },
    caches: null,
    cachesSaved: 0,
    outputs: null,
    artifacts: [],
    logCounts: { limitBytes: 1000, keptBytes: 120, droppedBytes: 0 },
    logs: { runLog: 900, ndjson: 1500 },
    ...over,
  };
}

function input(over: Partial<ResumeInput>): ResumeInput {
  return {
    checkpoint: checkpoint(),
    state: state("upload done\nsecrets present\noutputs absent\nstep 0 running\n"),
    runId: "r1",
    stepNames: ["a", "b"],
    secretNames: ["TOKEN"],
    secretsRead: 1,
    limitBytes: 1000,
    now: new Date("2026-12-07T10:01:00.000Z"),
    ...over,
  };
}

describe("planResume", () => {
  it("goes on from the checkpoint's step and offsets when the pod shows that step running", () => {
    const decision = planResume(input({}));
    assert.equal(decision.kind, "continue");
    assert.deepEqual(decision.kind === "continue" && decision.from.step, checkpoint().step);
    assert.match(
      decision.kind === "continue" ? decision.where : "",
      /step 1 \(in the pod: running, following it from byte 120\/0\)/,
    );
  });

  it("goes on from the checkpoint when the pod is ahead of it (the step ended, the next one not begun)", () => {
    const decision = planResume(input({ state: state("upload done\nsecrets present\nstep 0 exit 0\n") }));
    assert.equal(decision.kind, "continue");
    assert.match(decision.kind === "continue" ? decision.where : "", /exited 0/);
  });

  it("calls the run lost when the pod never started the step the runner followed", () => {
    const decision = planResume(input({ state: state("upload done\nsecrets present\n") }));
    assert.deepEqual(decision, { kind: "lost", message: "step 1 was followed but never started in the pod" });
  });

  it("calls the run lost when its steps still need secrets the pod does not hold", () => {
    const decision = planResume(input({ secretsRead: 0 }));
    assert.equal(decision.kind, "lost");
    assert.match(
      decision.kind === "lost" ? decision.message : "",
      /no longer holds the run's secrets \(0 of 1 found\)/,
    );
  });

  it("calls the run lost when it stopped before its secrets reached the pod", () => {
    const decision = planResume(input({ checkpoint: checkpoint({ phase: "upload", step: null }), secretsRead: 0 }));
    assert.equal(decision.kind, "lost");
    assert.match(decision.kind === "lost" ? decision.message : "", /only in the stopped runner's memory/);
  });

  it("makes the upload again for a run without secrets killed during it, and during the pod's wait", () => {
    for (const phase of ["setup", "upload"] as const) {
      const decision = planResume(
        input({ checkpoint: checkpoint({ phase, step: null }), secretNames: [], secretsRead: 0, state: state("") }),
      );
      assert.equal(decision.kind, "continue");
      assert.equal(decision.kind === "continue" && decision.from.phase, "upload");
    }
  });

  it("goes on with the outputs after pack-outputs removed the secrets", () => {
    const decision = planResume(
      input({
        checkpoint: checkpoint({ phase: "outputs", step: null }),
        state: state("upload done\nsecrets absent\noutputs packed\nstep 0 exit 0\nstep 1 exit 0\n"),
        secretsRead: 0,
      }),
    );
    assert.equal(decision.kind, "continue");
    assert.equal(decision.kind === "continue" && decision.from.phase, "outputs");
  });

  it("goes on at the teardown whatever the pod shows: the verdict is the checkpoint's", () => {
    const decision = planResume(input({ checkpoint: checkpoint({ phase: "teardown", step: null }), state: state("") }));
    assert.equal(decision.kind, "continue");
    assert.equal(decision.kind === "continue" && decision.from.phase, "teardown");
  });

  it("calls the run lost when its pod does not hold the run's files past the upload", () => {
    const decision = planResume(input({ state: state("upload absent\nsecrets present\nstep 0 running\n") }));
    assert.equal(decision.kind, "lost");
    assert.match(decision.kind === "lost" ? decision.message : "", /does not hold the run's files/);
  });

  it("without a checkpoint (an adopter) records the ended steps from their exit codes and starts at the running one", () => {
    const decision = planResume(
      input({
        checkpoint: undefined,
        stepNames: ["a", "b", "c"],
        state: state("upload done\nsecrets present\nstep 0 exit 0\nstep 1 running\n"),
      }),
    );
    assert.equal(decision.kind, "continue");
    if (decision.kind !== "continue") return;
    assert.equal(decision.from.phase, "steps");
    assert.deepEqual(decision.from.step, { index: 1, startedAt: "2026-12-07T10:01:00.000Z", offsets: null });
    assert.deepEqual(
      decision.from.steps.map((step) => [step.status, step.exitCode]),
      [
        ["success", 0],
        ["skipped", null],
        ["skipped", null],
      ],
    );
    assert.deepEqual(decision.from.logs, { runLog: 0, ndjson: 0 });
  });

  it("without a checkpoint goes to the outputs after a failed step, and calls a pod without the upload lost", () => {
    const failed = planResume(
      input({ checkpoint: undefined, state: state("upload done\nsecrets present\nstep 0 exit 4\n") }),
    );
    assert.equal(failed.kind === "continue" && failed.from.phase, "outputs");
    assert.equal(failed.kind === "continue" && failed.from.status, "failed");
    const bare = planResume(input({ checkpoint: undefined, state: state("upload absent\nsecrets absent\n") }));
    assert.equal(bare.kind, "lost");
  });
});

describe("parsePodRunState", () => {
  it("reads each fact of helper.sh state and skips lines it does not know", () => {
    const parsed = parsePodRunState(
      "upload done\nsecrets absent\noutputs packed\nstep 0 exit 0\nstep 1 killed\nstep 2 running\nsomething new\n",
    );
    assert.equal(parsed.uploaded, true);
    assert.equal(parsed.secrets, false);
    assert.equal(parsed.outputsPacked, true);
    assert.deepEqual(
      [...parsed.steps],
      [
        [0, { kind: "exit", code: 0 }],
        [1, { kind: "killed" }],
        [2, { kind: "running" }],
      ],
    );
  });
});
