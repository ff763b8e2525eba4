// The run's result (result.json): one shape for every outcome, mirroring the dev.knotless.check lexicon.
import type { LogCounts } from "../events/output-budget.js";
import type { RunStatus, StepStatus } from "../events/run-events.js";
import type { WorkflowSummary } from "../settings/plan-workflow-run.js";
import type { Capacity } from "../warm/claim-placeholder.js";
import type { ReadonlyList } from "../core/readonly-list.js";
import type { CacheReport } from "../workflow/cache-types.js";
import type { ArtifactReport } from "../workflow/artifact-types.js";

export const RESULT_TYPE = "dev.knotless.check";

export interface StepRecord {
  readonly name: string;
  readonly status: StepStatus;
  readonly exitCode: number | null;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  readonly durationMs: number;
  readonly timedOut: boolean;
}

/** A run's status; `skipped`: its workflow's `when` did not match the trigger, so nothing ran and the cluster was not touched. */
export type ResultStatus = RunStatus | "skipped";

export interface RunResult {
  readonly $type: typeof RESULT_TYPE;
  readonly runId: string;
  readonly status: ResultStatus;
  readonly error: string | null;
  readonly errorReason: string | null;
  readonly exitCode: number;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly durationMs: number;
  readonly job: {
    readonly namespace: string;
    readonly name: string;
    readonly pod: string | null;
    readonly node: string | null;
    readonly image: string;
  };
  /** "warm": the run claimed a placeholder and its pod went where that held a node; "cold": it did not; null: no Job was tried. */
  readonly capacity: Capacity | null;
  /** From the Job's creation to its pod running, ms; null when the pod never ran. */
  readonly podWaitMs: number | null;
  readonly steps: readonly StepRecord[];
  /** Downloaded files by path; may be a compact list rather than an array (up to 100,000 files): spread it for one. */
  readonly outputs: ReadonlyList<{ readonly path: string; readonly size: number; readonly sha256: string }>;
  readonly refusedOutputs: ReadonlyArray<{ readonly path: string; readonly reason: string }>;
  /** The step output the logs kept against the run's budget (--max-log-bytes), and what they left out. */
  readonly logs: LogCounts;
  /** Per cache of the workflow: what was restored (exact, fallback with the key, miss, failed) and saved, bytes and ms. */
  readonly caches: readonly CacheReport[];
  /** Per artifact of the workflow: collected (its files, the manifest), empty, skipped or failed. */
  readonly artifacts: readonly ArtifactReport[];
  /** The workflow file the run came from, its clone settings and the trigger's match; absent for a steps file. */
  readonly workflow?: WorkflowSummary;
}

export interface RunResultInput {
  readonly runId: string;
  readonly status: RunStatus;
  readonly error?: { readonly message: string; readonly reason: string };
  readonly startedAt: Date;
  readonly finishedAt: Date;
  readonly job: RunResult["job"];
  readonly capacity?: Capacity;
  readonly podWaitMs?: number;
  readonly steps: readonly StepRecord[];
  readonly outputs?: RunResult["outputs"];
  readonly refusedOutputs?: RunResult["refusedOutputs"];
  readonly logs: LogCounts;
  readonly caches?: readonly CacheReport[];
  readonly artifacts?: readonly ArtifactReport[];
  readonly workflow?: WorkflowSummary;
}

/** The step entry of a step that never ran. */
export function buildSkippedStep(name: string): StepRecord {
  return { name, status: "skipped", exitCode: null, startedAt: null, finishedAt: null, durationMs: 0, timedOut: false };
}

/** The run's exit code field: 0, the failing step's code, or -1 when no step exit code applies. */
function pickExitCode(status: RunStatus, steps: readonly StepRecord[], hasError: boolean): number {
  if (status === "success") return 0;
  if (hasError || status !== "failed") return -1;
  return steps.find((step) => step.status === "failed")?.exitCode ?? -1;
}

/** Builds the result: a pure function of what the run saw. */
export function buildRunResult(input: RunResultInput): RunResult & { readonly status: RunStatus } {
  return {
    $type: RESULT_TYPE,
    runId: input.runId,
    status: input.status,
    error: input.error?.message ?? null,
    errorReason: input.error?.reason ?? null,
    exitCode: pickExitCode(input.status, input.steps, input.error !== undefined),
    startedAt: input.startedAt.toISOString(),
    finishedAt: input.finishedAt.toISOString(),
    durationMs: Math.max(0, input.finishedAt.getTime() - input.startedAt.getTime()),
    job: input.job,
    capacity: input.capacity ?? null,
    podWaitMs: input.podWaitMs ?? null,
    steps: input.steps,
    outputs: input.outputs ?? [],
    refusedOutputs: input.refusedOutputs ?? [],
    logs: { limitBytes: input.logs.limitBytes, keptBytes: input.logs.keptBytes, droppedBytes: input.logs.droppedBytes },
    caches: input.caches ?? [],
    artifacts: input.artifacts ?? [],
    ...(input.workflow ? { workflow: input.workflow } : {}),
  };
}

/** The result of a run whose workflow did not match its trigger: every step skipped, no Job, exit code 0. */
export function buildNotMatchedResult(
  input: Omit<RunResultInput, "status" | "error" | "outputs" | "refusedOutputs"> & {
    readonly workflow: WorkflowSummary;
  },
): RunResult {
  return { ...buildRunResult({ ...input, status: "success" }), status: "skipped" };
}
