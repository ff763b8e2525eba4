import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EXIT, exitCodeForError, exitCodeForResult } from "../../src/cli/exit-codes.js";
import { CancelledError, InfraError, InputError } from "../../src/core/errors.js";
import { buildRunResult, type RunResultInput } from "../../src/run/run-result.js";

const base: RunResultInput = {
  runId: "1",
  status: "success",
  startedAt: new Date(0),
  finishedAt: new Date(1000),
  job: { namespace: "default", name: "knotless-run-1", pod: null, node: null, image: "busybox:1.36" },
  steps: [],
  logs: { limitBytes: 1024, keptBytes: 0, droppedBytes: 0 },
};

describe("exitCodeForResult", () => {
  it("maps success to 0, a failed step to 1 and a timeout to 1", () => {
    assert.equal(exitCodeForResult(buildRunResult(base)), EXIT.success);
    assert.equal(exitCodeForResult(buildRunResult({ ...base, status: "failed" })), EXIT.stepFailed);
    assert.equal(exitCodeForResult(buildRunResult({ ...base, status: "timeout" })), EXIT.stepFailed);
  });

  it("maps a run timeout outside the steps to 1, not to an infrastructure failure", () => {
    assert.equal(
      exitCodeForResult(
        buildRunResult({ ...base, status: "timeout", error: { message: "ran out", reason: "run-timeout" } }),
      ),
      1,
    );
  });

  it("maps infrastructure failures to 3, input errors to 2 and cancellation to 130", () => {
    assert.equal(
      exitCodeForResult(buildRunResult({ ...base, status: "failed", error: { message: "x", reason: "pod-lost" } })),
      3,
    );
    assert.equal(
      exitCodeForResult(buildRunResult({ ...base, status: "failed", error: { message: "x", reason: "input" } })),
      2,
    );
    assert.equal(
      exitCodeForResult(buildRunResult({ ...base, status: "cancelled", error: { message: "x", reason: "cancelled" } })),
      130,
    );
  });
});

describe("exitCodeForError", () => {
  it("maps each typed error to its code", () => {
    assert.equal(exitCodeForError(new InputError("bad")), 2);
    assert.equal(exitCodeForError(new InfraError("pod-lost", "gone")), 3);
    assert.equal(exitCodeForError(new CancelledError()), 130);
  });
});
