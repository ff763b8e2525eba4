// Follows the run's events to know each step's entry at any moment: what a crashing CLI writes into result.json.
import type { RunEvent, RunEventSink } from "../events/run-events.js";
import { buildSkippedStep, type StepRecord } from "./run-result.js";

export interface StepTracker {
  /** A sink to add to the run's sinks. */
  readonly sink: RunEventSink;
  /** When the run started (its run-start event), if it has. */
  readonly startedAt: () => Date | undefined;
  /**
   * The step entries as the events told them; a step that started and never ended is closed as `closeAs` (failed
   * unless said otherwise) at `now` with no exit code (the run stopped under it). Steps that never started are skipped.
   */
  readonly stepsClosedAt: (now: Date, closeAs?: "failed" | "cancelled") => StepRecord[];
}

export function createStepTracker(): StepTracker {
  let steps: StepRecord[] = [];
  let startedAt: Date | undefined;
  const sink = (event: RunEvent): void => {
    if (event.kind === "run-start") {
      startedAt = new Date(event.time);
      steps = event.steps.map((name) => buildSkippedStep(name));
    } else if (event.kind === "step-start" && steps[event.index]) {
      steps[event.index] = { ...steps[event.index]!, status: "cancelled", startedAt: event.time };
    } else if (event.kind === "step-end" && steps[event.index]) {
      const { status, exitCode, durationMs, timedOut } = event;
      steps[event.index] = { ...steps[event.index]!, status, exitCode, finishedAt: event.time, durationMs, timedOut };
    }
  };
  return {
    sink,
    startedAt: () => startedAt,
    stepsClosedAt: (now, closeAs = "failed") =>
      steps.map((step) =>
        step.startedAt !== null && step.finishedAt === null
          ? {
              ...step,
              status: closeAs,
              exitCode: null,
              finishedAt: now.toISOString(),
              durationMs: Math.max(0, now.getTime() - Date.parse(step.startedAt)),
            }
          : step,
      ),
  };
}
