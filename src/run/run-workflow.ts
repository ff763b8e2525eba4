// Runs one workflow run end to end on an executor: steps in order, first failure ends it, teardown always.
import { CancelledError, InfraError, InputError, describeError } from "../errors.js";
import { createEventEmitter, type RunEventSink, type RunStatus } from "../events/run-events.js";
import { runTimedPhase } from "../events/timed-phase.js";
import type { Kubectl } from "../k8s/kubectl.js";
import { DEFAULT_TIMINGS, type ExecutorContext, type ExecutorSettings, type ExecutorTimings } from "../executor/context.js";
import type { Executor, StepOutcome } from "../executor/executor.js";
import { KubernetesExecutor } from "../executor/kubernetes-executor.js";
import { buildRunResult, buildSkippedStep, type RunResult, type StepRecord } from "../result/run-result.js";
import type { ExtractReport } from "../transfer/extract-outputs.js";
import { scanUploadTrees, type TreeScan, type UploadTrees } from "../transfer/scan-tree.js";

export interface RunWorkflowOptions {
  readonly settings: ExecutorSettings & { readonly stepTimeoutMs?: number };
  readonly kubectl: Kubectl;
  /** Abort to cancel the run: the current step stops, the Job is deleted, the status is cancelled. */
  readonly signal: AbortSignal;
  readonly sinks: readonly RunEventSink[];
  readonly timings?: Partial<ExecutorTimings>;
  /** Makes the executor from the run's context; the Kubernetes executor unless a test scripts its own. */
  readonly createExecutor?: (ctx: ExecutorContext) => Executor;
}

/** The failure class recorded for errors that are not the infrastructure's (exit code 2 or an internal bug). */
export type FailureClass = "input" | "internal";

/** Runs the workflow and resolves with its result; it rejects only for bugs, never for a failed step or cluster. */
export async function runWorkflow(options: RunWorkflowOptions): Promise<RunResult> {
  const { settings } = options;
  const emit = createEventEmitter(options.sinks);
  const timings = { ...DEFAULT_TIMINGS, ...options.timings };
  const startedAt = new Date();
  const { signal, dispose } = linkRunSignal(options.signal, settings.timeoutMs + timings.runDeadlineGraceMs + timings.killGraceSeconds * 1000);
  const ctx: ExecutorContext = { settings, timings, kubectl: options.kubectl, emit, signal };
  const executor = (options.createExecutor ?? ((c: ExecutorContext) => new KubernetesExecutor(c)))(ctx);
  const { namespace } = settings.target;
  emit({ kind: "run-start", runId: settings.runId, jobName: settings.jobName, ...(namespace === undefined ? {} : { namespace }), image: settings.image, steps: settings.steps.map((s) => s.name) });
  const steps: StepRecord[] = settings.steps.map((step) => buildSkippedStep(step.name));
  let status: RunStatus = "success";
  let error: { message: string; reason: string } | undefined;
  let report: ExtractReport | undefined;
  try {
    const trees = await scanInput(settings, emit);
    await executor.setup();
    await executor.copyIn(trees);
    status = await runSteps(executor, settings, steps, startedAt.getTime(), emit, signal);
    report = await executor.copyOut();
  } catch (thrown) {
    ({ status, error } = classifyFailure(thrown, signal));
    markRunningStep(steps, status === "timeout" || status === "cancelled" ? status : "failed", emit);
  } finally {
    dispose();
    const torn = await executor.teardown();
    // A Job left behind keeps a paid node alive: never a clean result, whatever the steps did.
    if (torn.leftBehind) ({ status, error } = reportLeftBehind(status, error, torn.detail));
  }
  for (const refused of report?.refused ?? []) emit({ kind: "notice", level: "warning", message: `refused output ${refused.path}: ${refused.reason}` });
  if (report?.limitReached) emit({ kind: "notice", level: "warning", message: `outputs stopped at the limit of ${settings.maxOutputBytes} bytes; the rest was not downloaded` });
  const result = buildRunResult({
    runId: settings.runId,
    status,
    ...(error ? { error } : {}),
    startedAt,
    finishedAt: new Date(),
    job: { namespace: executor.namespace ?? "", name: settings.jobName, pod: executor.pod?.name ?? null, node: executor.pod?.node || null, image: settings.image },
    ...(executor.capacity ? { capacity: executor.capacity } : {}),
    ...(executor.podWaitMs === undefined ? {} : { podWaitMs: executor.podWaitMs }),
    steps,
    outputs: report?.files ?? [],
    refusedOutputs: report?.refused ?? [],
  });
  emit({ kind: "run-end", status: result.status, exitCode: result.exitCode, ...(result.error ? { error: result.error } : {}), durationMs: result.durationMs });
  return result;
}

type Emit = ReturnType<typeof createEventEmitter>;

/**
 * The "scan" phase: lists the checkout and the shared steps and checks that every file can be read, before the
 * Job exists, so a bad tree fails the run as bad input without a single kubectl call (a ScanError is an InputError).
 */
function scanInput(settings: RunWorkflowOptions["settings"], emit: Emit): Promise<UploadTrees> {
  return runTimedPhase(emit, "scan", () => scanUploadTrees(settings.checkoutDir, settings.sharedStepsDir), describeTrees);
}

function describeTrees(trees: UploadTrees): string {
  const count = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;
  const describe = (what: string, tree: TreeScan): string =>
    `${what} ${count(tree.entries, "entry", "entries")} (${count(tree.files, "file", "files")}, ${count(tree.dirs, "directory", "directories")}, ${count(tree.symlinks, "symlink", "symlinks")})`;
  return [describe("checkout", trees.work), ...(trees.steps ? [describe("shared steps", trees.steps)] : [])].join("; ");
}

/** Runs every step in order until one does not succeed; returns the run status the steps decided. */
async function runSteps(executor: Executor, settings: RunWorkflowOptions["settings"], steps: StepRecord[], runStartedAt: number, emit: Emit, signal: AbortSignal): Promise<RunStatus> {
  const runDeadline = runStartedAt + settings.timeoutMs;
  for (const [index, spec] of settings.steps.entries()) {
    if (signal.aborted) throw new CancelledError();
    if (Date.now() >= runDeadline) return "timeout";
    const started = new Date();
    const deadline = Math.min(runDeadline, settings.stepTimeoutMs ? started.getTime() + settings.stepTimeoutMs : Infinity);
    steps[index] = { ...steps[index]!, status: "cancelled", startedAt: started.toISOString() }; // until it ends
    emit({ kind: "step-start", index, name: spec.name, command: spec.script });
    const end = (outcome: StepOutcome): void => {
      const finished = new Date();
      const record: StepRecord = {
        name: spec.name,
        status: outcome.status,
        exitCode: outcome.exitCode,
        startedAt: started.toISOString(),
        finishedAt: finished.toISOString(),
        durationMs: finished.getTime() - started.getTime(),
        timedOut: outcome.timedOut,
      };
      steps[index] = record;
      emit({ kind: "step-end", index, name: spec.name, status: record.status, exitCode: record.exitCode, durationMs: record.durationMs, timedOut: record.timedOut });
    };
    let outcome: StepOutcome;
    try {
      outcome = await executor.runStep(index, deadline);
    } catch (error) {
      // The step's time was up and stopping it failed (the kill not confirmed, the pod lost): the run fails on
      // that error, and the step's own entry still says what happened to it.
      if (error instanceof InfraError && Date.now() >= deadline) end({ status: "timeout", exitCode: null, timedOut: true });
      throw error;
    }
    end(outcome);
    if (outcome.status !== "success") return outcome.status === "timeout" ? "timeout" : "failed";
  }
  return "success";
}

/** The run's own time ran out outside a step. */
class RunDeadlineError extends Error {
  override readonly name = "RunDeadlineError";
}

/** A signal aborted by the caller's cancel or by the run's backstop deadline, whichever comes first. */
function linkRunSignal(cancel: AbortSignal, deadlineMs: number): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const onCancel = (): void => controller.abort(cancel.reason);
  if (cancel.aborted) onCancel();
  cancel.addEventListener("abort", onCancel, { once: true });
  const timer = setTimeout(() => controller.abort(new RunDeadlineError(`the run's timeout of ${Math.round(deadlineMs / 1000)}s (with grace) ran out`)), Math.min(deadlineMs, 2_147_483_647));
  return {
    signal: controller.signal,
    dispose: () => {
      clearTimeout(timer);
      cancel.removeEventListener("abort", onCancel);
    },
  };
}

/** Closes the entry of a step that was running when the run stopped. */
function markRunningStep(steps: StepRecord[], status: "failed" | "cancelled" | "timeout", emit: Emit): void {
  const index = steps.findIndex((step) => step.startedAt !== null && step.finishedAt === null);
  if (index < 0) return;
  const step = steps[index]!;
  const finished = new Date();
  const durationMs = finished.getTime() - Date.parse(step.startedAt!);
  const timedOut = status === "timeout";
  steps[index] = { ...step, status, exitCode: null, finishedAt: finished.toISOString(), durationMs, timedOut };
  emit({ kind: "step-end", index, name: step.name, status, exitCode: null, durationMs, timedOut });
}

/**
 * Adds a Job left behind to the run's verdict: a run without an error becomes a teardown failure (a successful
 * one is failed: exit 3), a run that already has an error keeps it and says this too.
 */
function reportLeftBehind(status: RunStatus, error: { message: string; reason: string } | undefined, detail: string): { status: RunStatus; error: { message: string; reason: string } } {
  if (error) return { status, error: { ...error, message: `${error.message}; also: ${detail}` } };
  return { status: status === "success" ? "failed" : status, error: { message: detail, reason: "teardown-failed" } };
}

/** Maps what stopped the run to its status and error: the only place that reads error types for the result. */
function classifyFailure(thrown: unknown, signal: AbortSignal): { status: RunStatus; error: { message: string; reason: string } } {
  if (signal.reason instanceof RunDeadlineError) return { status: "timeout", error: { message: signal.reason.message, reason: "run-timeout" } };
  if (thrown instanceof CancelledError || signal.aborted) {
    const reason = signal.reason instanceof Error ? signal.reason.message : "the run was cancelled";
    return { status: "cancelled", error: { message: reason, reason: "cancelled" } };
  }
  if (thrown instanceof InfraError) return { status: "failed", error: { message: thrown.message, reason: thrown.reason } };
  if (thrown instanceof InputError) return { status: "failed", error: { message: thrown.message, reason: "input" satisfies FailureClass } };
  return { status: "failed", error: { message: `internal error: ${describeError(thrown)}`, reason: "internal" satisfies FailureClass } };
}
