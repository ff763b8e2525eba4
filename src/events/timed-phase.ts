// Runs one phase of the run between a phase-start and a phase-end event that says how it went and how long it took.
import { describeError } from "../core/errors.js";
import type { Phase, RunEventInput } from "./run-events.js";

/**
 * Emits phase-start, runs `work` and emits phase-end: ok with `describe(value)` as its detail (and `countBytes(value)`
 * as its bytes, when given), or not ok with the error's message (and rethrows it). The teardown has its own pair:
 * its outcome is not an exception.
 */
export async function runTimedPhase<T>(
  emit: (event: RunEventInput) => void,
  phase: Exclude<Phase, "teardown">,
  work: () => T | Promise<T>,
  describe: (value: T) => string,
  countBytes?: (value: T) => number,
): Promise<T> {
  const started = Date.now();
  emit({ kind: "phase-start", phase });
  try {
    const value = await work();
    emit({
      kind: "phase-end",
      phase,
      ok: true,
      durationMs: Date.now() - started,
      detail: describe(value),
      ...(countBytes ? { bytes: countBytes(value) } : {}),
    });
    return value;
  } catch (error) {
    emit({ kind: "phase-end", phase, ok: false, durationMs: Date.now() - started, detail: describeError(error) });
    throw error;
  }
}
