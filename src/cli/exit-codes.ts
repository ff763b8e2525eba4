// The process exit codes, and the one place that maps results and errors to them.
import { CancelledError, InfraError, InputError } from "../errors.js";
import type { RunResult } from "../result/run-result.js";

export const EXIT = {
  success: 0,
  /** A step failed or timed out (the run's own verdict). */
  stepFailed: 1,
  /** Bad input: nothing was touched in the cluster. */
  badInput: 2,
  /** The infrastructure failed: cluster unreachable, pod never ready, image pull, pod lost, exec without exit code, integrity. */
  infrastructure: 3,
  cancelled: 130,
} as const;

export function exitCodeForResult(result: RunResult): number {
  if (result.status === "cancelled") return EXIT.cancelled;
  if (result.status === "timeout") return EXIT.stepFailed;
  if (result.errorReason === "input") return EXIT.badInput;
  if (result.errorReason !== null) return EXIT.infrastructure;
  return result.status === "success" ? EXIT.success : EXIT.stepFailed;
}

export function exitCodeForError(error: unknown): number {
  if (error instanceof InputError) return EXIT.badInput;
  if (error instanceof CancelledError) return EXIT.cancelled;
  if (error instanceof InfraError) return EXIT.infrastructure;
  return EXIT.infrastructure;
}
