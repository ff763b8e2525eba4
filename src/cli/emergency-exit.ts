// What a runner that must exit at once (a crash, a second signal) still does before process.exit: it tells its log
// files why, writes result.json from the events seen so far, and finishes the logs synchronously.
import { join } from "node:path";
import type { LogCounts } from "../events/output-budget.js";
import { createEventEmitter, type RunEventInput, type RunStatus } from "../events/run-events.js";
import type { ClosableSink } from "../events/sinks.js";
import { writeResultFileSync } from "../run/result-file.js";
import { buildRunResult, type RunResult } from "../run/run-result.js";
import type { StepTracker } from "../run/step-tracker.js";

export interface EmergencyExit {
  /** Writes `event` to the log files only (the console gets its own line on stderr); never throws. */
  log(event: RunEventInput): void;
  /**
   * Writes result.json and the run-end line, then finishes and closes the log files; never throws (a result.json
   * that cannot be written is reported through `warn`). A step that started and never ended is closed as
   * `stepStatus`, without an exit code; `logs` are the run's output budget's counts so far.
   */
  finish(input: {
    readonly status: RunStatus;
    readonly error: { readonly message: string; readonly reason: string };
    readonly stepStatus: "failed" | "cancelled";
    readonly job: RunResult["job"];
    readonly logs: LogCounts;
  }): void;
}

export function prepareEmergencyExit(options: {
  readonly outDir: string;
  readonly runId: string;
  readonly logFiles: readonly ClosableSink[];
  readonly stepTracker: StepTracker;
  readonly warn: (message: string) => void;
}): EmergencyExit {
  // An emitter of their own: a bug in a sink must not stop what follows (the Job's deletion, the exit).
  const emit = createEventEmitter(options.logFiles.map((log) => log.sink));
  const log = (event: RunEventInput): void => {
    try {
      emit(event);
    } catch {
      // stderr has it.
    }
  };
  return {
    log,
    finish({ status, error, stepStatus, job, logs }) {
      try {
        const now = new Date();
        const result = buildRunResult({
          runId: options.runId,
          status,
          error,
          startedAt: options.stepTracker.startedAt() ?? now,
          finishedAt: now,
          job,
          steps: options.stepTracker.stepsClosedAt(now, stepStatus),
          logs,
        });
        log({
          kind: "run-end",
          status: result.status,
          exitCode: result.exitCode,
          ...(result.error ? { error: result.error } : {}),
          durationMs: result.durationMs,
        });
        writeResultFileSync(join(options.outDir, "result.json"), result);
      } catch (writeError) {
        options.warn(
          `could not write result.json: ${writeError instanceof Error ? writeError.message : String(writeError)}`,
        );
      }
      for (const file of options.logFiles) file.closeSync();
    },
  };
}
