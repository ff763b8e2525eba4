// Tests createStepTracker: the step entries a crashing CLI writes, rebuilt from the run's events.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { RunEvent } from "../../src/events/run-events.js";
import { createStepTracker } from "../../src/run/step-tracker.js";
import { SAMPLE_EVENTS } from "../support/run-event-samples.js";

const RUN_START: RunEvent = { ...SAMPLE_EVENTS["run-start"], steps: ["build", "test", "package"] };

describe("createStepTracker", () => {
  it("knows nothing before the run starts", () => {
    const tracker = createStepTracker();
    assert.equal(tracker.startedAt(), undefined);
    assert.deepEqual(tracker.stepsClosedAt(new Date()), []);
  });

  it("keeps ended steps as their step-end said, closes the running one as failed without exit code, and skips the rest", () => {
    const tracker = createStepTracker();
    tracker.sink(RUN_START);
    tracker.sink({ ...SAMPLE_EVENTS["step-start"], index: 0, name: "build", time: "2026-11-29T10:00:03.000Z" });
    tracker.sink({
      ...SAMPLE_EVENTS["step-end"],
      index: 0,
      name: "build",
      status: "success",
      exitCode: 0,
      durationMs: 1500,
      time: "2026-11-29T10:00:04.500Z",
    });
    tracker.sink({ ...SAMPLE_EVENTS["step-start"], index: 1, name: "test", time: "2026-11-29T10:00:05.000Z" });
    tracker.sink({ ...SAMPLE_EVENTS["step-output"], index: 1 });
    const steps = tracker.stepsClosedAt(new Date("2026-11-29T10:00:07.500Z"));
    assert.equal(tracker.startedAt()?.toISOString(), RUN_START.time);
    assert.deepEqual(steps, [
      {
        name: "build",
        status: "success",
        exitCode: 0,
        startedAt: "2026-11-29T10:00:03.000Z",
        finishedAt: "2026-11-29T10:00:04.500Z",
        durationMs: 1500,
        timedOut: false,
      },
      {
        name: "test",
        status: "failed",
        exitCode: null,
        startedAt: "2026-11-29T10:00:05.000Z",
        finishedAt: "2026-11-29T10:00:07.500Z",
        durationMs: 2500,
        timedOut: false,
      },
      {
        name: "package",
        status: "skipped",
        exitCode: null,
        startedAt: null,
        finishedAt: null,
        durationMs: 0,
        timedOut: false,
      },
    ]);
  });

  it("closes the running step as cancelled when asked to (a runner told to exit at once)", () => {
    const tracker = createStepTracker();
    tracker.sink(RUN_START);
    tracker.sink({ ...SAMPLE_EVENTS["step-start"], index: 0, name: "build" });
    assert.deepEqual(
      tracker.stepsClosedAt(new Date(), "cancelled").map((step) => [step.status, step.exitCode]),
      [
        ["cancelled", null],
        ["skipped", null],
        ["skipped", null],
      ],
    );
  });

  it("keeps a timed-out step's entry as its step-end said", () => {
    const tracker = createStepTracker();
    tracker.sink(RUN_START);
    tracker.sink({ ...SAMPLE_EVENTS["step-start"], index: 0, name: "build" });
    tracker.sink({
      ...SAMPLE_EVENTS["step-end"],
      index: 0,
      name: "build",
      status: "timeout",
      exitCode: null,
      durationMs: 900,
      timedOut: true,
    });
    assert.deepEqual(
      tracker.stepsClosedAt(new Date()).map((step) => [step.status, step.timedOut]),
      [
        ["timeout", true],
        ["skipped", false],
        ["skipped", false],
      ],
    );
  });
});
