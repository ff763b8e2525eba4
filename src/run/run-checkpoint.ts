// A run's durable progress: where it was, what it had done and how much of its logs and step output were written.
import { InputError } from "../core/errors.js";
import type { LogCounts } from "../events/output-budget.js";
import type { ArtifactReport } from "../workflow/artifact-types.js";
import type { CacheReport } from "../workflow/cache-types.js";
import type { ExtractedFile, RefusedEntry } from "../transfer/extract-outputs.js";
import type { RunStatus } from "../events/run-events.js";
import type { StepRecord } from "./run-result.js";

/** The run's phases in order; a checkpoint names the one it is in (written before the phase acts). */
export const CHECKPOINT_PHASES = [
  "setup",
  "upload",
  "restore",
  "steps",
  "save",
  "outputs",
  "artifacts",
  "teardown",
] as const;
export type CheckpointPhase = (typeof CHECKPOINT_PHASES)[number];

/** The outputs' download report as the checkpoint keeps it (its file list as an array). */
export interface OutputsDone {
  readonly files: readonly ExtractedFile[];
  readonly refused: readonly RefusedEntry[];
  readonly bytes: number;
  readonly limitReached: boolean;
  readonly entries: number;
  readonly nameNewlines: number;
}

/**
 * Everything a restarted runner needs, besides the plan (src/run/run-plan.ts) and the secrets it reads back from
 * the pod, to continue the run so that its logs and result are an uninterrupted run's. Each checkpoint is consistent:
 * the log files held exactly `logs` bytes (written, not queued) when it was taken, and the step's output up to
 * `step.offsets` is in them, no more, no less.
 */
export interface RunCheckpoint {
  readonly version: 1;
  readonly runId: string;
  /** The run's start: its deadline counts from it. */
  readonly startedAt: string;
  /** The Job's namespace, pinned once the Job was created. */
  readonly namespace: string | null;
  readonly pod: { readonly name: string; readonly node: string } | null;
  readonly capacity: "warm" | "cold" | null;
  readonly podWaitMs: number | null;
  readonly phase: CheckpointPhase;
  /** The run's status as its steps decided so far ("success" until one did not succeed). */
  readonly status: RunStatus;
  /** At the teardown: the run's error, when it has one (masked), so a restart ends it with the same verdict. */
  readonly error?: { readonly message: string; readonly reason: string };
  /** Every step's entry as result.json would have it now (the ended ones final, the others skipped). */
  readonly steps: readonly StepRecord[];
  /** The step in progress: when it started and its output already relayed and logged (null: not started yet). */
  readonly step: {
    readonly index: number;
    readonly startedAt: string;
    readonly offsets: { readonly stdout: number; readonly stderr: number } | null;
  } | null;
  /** The caches' reports once restored (then each save's as it ends); null before the restores ended. */
  readonly caches: readonly CacheReport[] | null;
  /** How many of `caches` have their save done (or skipped). */
  readonly cachesSaved: number;
  readonly outputs: OutputsDone | null;
  /** The artifacts collected so far, in the workflow's order. */
  readonly artifacts: readonly ArtifactReport[];
  /** The output budget's counts at this point. */
  readonly logCounts: LogCounts;
  /** The lengths of run.log and log.ndjson at this point. */
  readonly logs: { readonly runLog: number; readonly ndjson: number };
}

/** Where checkpoints go: serve's SQLite row, `run`'s checkpoint.json. Each save replaces the last. */
export interface CheckpointStore {
  /** Writes the checkpoint durably before returning (or throws: the run goes on, resumable from the last one). */
  save(checkpoint: RunCheckpoint): void;
}

/** Reads a checkpoint's JSON text back; throws InputError for text that is not a checkpoint of this version. */
export function readRunCheckpoint(text: string): RunCheckpoint {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new InputError(`the run's checkpoint is not JSON: ${(error as Error).message}`);
  }
  const checkpoint = parsed as Partial<RunCheckpoint> | null;
  if (checkpoint === null || typeof checkpoint !== "object" || checkpoint.version !== 1 || !checkpoint.logs)
    throw new InputError("the run's checkpoint is not a checkpoint of version 1 (written by another runner version?)");
  return checkpoint as RunCheckpoint;
}
