// The process exit codes of every command, their meaning for --help and the README, and the one place that maps results and errors to them.
import { CancelledError, InfraError, InputError, StateError } from "../core/errors.js";
import type { RunResult } from "../run/run-result.js";

export const EXIT = {
  success: 0,
  /** A step failed or timed out (the run's own verdict). */
  stepFailed: 1,
  /** Bad input: nothing was touched in the cluster. */
  badInput: 2,
  /** The infrastructure failed: cluster unreachable, pod never ready, image pull, pod lost, exec without exit code, integrity. */
  infrastructure: 3,
  /** serve: its state (runner.sqlite, the state directory) cannot be opened or written; nothing was started. */
  stateUnavailable: 4,
  cancelled: 130,
} as const;

/** What each code means, in the words --help prints. */
export const EXIT_CODE_MEANINGS: ReadonlyArray<readonly [number, string]> = [
  [EXIT.success, "success (for run: the run succeeded, or its workflow did not match the trigger)"],
  [EXIT.stepFailed, "a step failed or timed out"],
  [
    EXIT.badInput,
    "bad input: a message names the file, line and column and what was expected; nothing was touched in the cluster",
  ],
  [
    EXIT.infrastructure,
    "infrastructure failure (cluster unreachable, permission denied, pod never ready, image pull, pod lost, exec without exit code, integrity), or an internal error (the Job is deleted first)",
  ],
  [
    EXIT.stateUnavailable,
    "serve: the service's state cannot be opened (runner.sqlite empty beside kept runs, damaged, not a database or read-only; the state directory not writable): the message names the file and what to do; nothing was started",
  ],
  [EXIT.cancelled, "cancelled (SIGINT/SIGTERM, or `cancel` from another process); the Job is deleted"],
];

/** The "Exit codes:" section of --help. */
export function formatExitCodesHelp(): string {
  return `\nExit codes:\n${EXIT_CODE_MEANINGS.map(([code, meaning]) => `  ${String(code).padEnd(4)} ${meaning}`).join("\n")}`;
}

export function exitCodeForResult(result: RunResult): number {
  if (result.status === "cancelled") return EXIT.cancelled;
  if (result.status === "skipped") return EXIT.success; // the workflow's `when` did not match: nothing ran
  if (result.status === "timeout") return EXIT.stepFailed;
  if (result.errorReason === "input") return EXIT.badInput;
  // A required artifact the steps did not produce is the workflow's failure, like a failed step.
  if (result.errorReason === "artifact-missing") return EXIT.stepFailed;
  if (result.errorReason !== null) return EXIT.infrastructure;
  return result.status === "success" ? EXIT.success : EXIT.stepFailed;
}

export function exitCodeForError(error: unknown): number {
  if (error instanceof InputError) return EXIT.badInput;
  if (error instanceof CancelledError) return EXIT.cancelled;
  if (error instanceof StateError) return EXIT.stateUnavailable;
  if (error instanceof InfraError) return EXIT.infrastructure;
  return EXIT.infrastructure;
}
