// Runs one workflow run end to end on an executor: steps in order, first failure ends it, teardown always.
import { rm } from "node:fs/promises";
import { join } from "node:path";
import {
  CancelledError,
  InfraError,
  InputError,
  RunTakenOverError,
  describeError,
  type InfraReason,
} from "../core/errors.js";
import { createEventMask, maskStrings } from "../events/mask-events.js";
import { SecretMasker } from "../secrets/mask-stream.js";
import { createOutputBudget, DEFAULT_MAX_LOG_BYTES, type OutputBudget } from "../events/output-budget.js";
import {
  createEventEmitter,
  type RunEvent,
  type RunEventInput,
  type RunEventSink,
  type RunStatus,
} from "../events/run-events.js";
import { runTimedPhase } from "../events/timed-phase.js";
import type { RunCluster } from "../cluster/cluster.js";
import { DEFAULT_TIMINGS, type ExecutorContext, type ExecutorTimings } from "../executor/kubernetes/context.js";
import type { Executor, StepOutcome } from "../executor/executor.js";
import { KubernetesExecutor } from "../executor/kubernetes/kubernetes-executor.js";
import { maskOutputPaths } from "./mask-output-paths.js";
import { buildRunResult, buildSkippedStep, type RunResult, type StepRecord } from "./run-result.js";
import type { ExtractReport } from "../transfer/extract-outputs.js";
import type { StepSpec } from "../workflow/steps-file.js";
import type { RunSettings } from "../executor/kubernetes/context.js";
import { scanUploadTrees, type TreeScan, type UploadTrees } from "../transfer/scan-tree.js";
import { cloneAtSha, GitCheckoutError } from "../transfer/git-checkout.js";
import type { CacheDriver } from "../cache/cache-driver.js";
import type { CacheReport } from "../workflow/cache-types.js";
import { restoreCaches, saveCaches, skipCacheSaves } from "../cache/run-caches.js";
import type { ArtifactReport } from "../workflow/artifact-types.js";
import { collectArtifacts, findMissingRequired, skipArtifacts } from "./run-artifacts.js";
import type { LogFileProgress } from "../events/sinks.js";
import { Checkpointer } from "./checkpointer.js";
import { CHECKPOINT_PHASES, type CheckpointPhase, type CheckpointStore, type RunCheckpoint } from "./run-checkpoint.js";
import { planResume } from "./plan-resume.js";
import { describeFencedAction, type FencedAction, type RunFence } from "./run-fence.js";

export interface RunWorkflowOptions {
  readonly settings: RunSettings;
  /** The cluster to run on (any transport: cluster/; a KubectlCluster over a kubectl client for the kubectl transport). */
  readonly cluster: RunCluster;
  /**
   * Abort to cancel the run: the current step's processes in the pod are stopped, what they wrote to /outputs is
   * collected, the Job is deleted, the status is cancelled. A cancel requested through the cluster (the Job's
   * cancel-requested annotation, `knotless-runner-k8s cancel`) does the same. Aborted with an InfraError (the
   * runner's disk full), the run ends the same way but `failed`, with that error's reason and message.
   */
  readonly signal: AbortSignal;
  /**
   * Abort (after `signal`) to skip what is left of a cancelled run's clean-up (stopping the step, collecting the
   * outputs) and go straight to teardown; that clean-up is bounded by the timings' cancelCleanupMs regardless.
   */
  readonly forceSignal?: AbortSignal;
  /** Every event goes to every sink, step output within the run's budget of settings.maxLogBytes. */
  readonly sinks: readonly RunEventSink[];
  /**
   * The budget the events pass through on their way to the sinks, made with settings.maxLogBytes; absent, the run
   * makes it. A caller passes its own to read the counts while the run cannot return (the CLI's crash path).
   */
  readonly outputBudget?: OutputBudget;
  readonly timings?: Partial<ExecutorTimings>;
  /** Makes the executor from the run's context; the Kubernetes executor unless a test scripts its own. */
  readonly createExecutor?: (ctx: ExecutorContext) => Executor;
  /**
   * The backend of settings.caches, made for the run's executor and event stream (the CLI passes openCacheDriver,
   * src/cache/open-cache-driver.ts, which makes the directory store's from settings.cacheBackend). Absent (or
   * undefined) while settings have caches: each is a warning and a failed restore, never a failed run.
   */
  readonly cacheDriver?: (executor: Executor, emit: (event: RunEventInput) => void) => CacheDriver | undefined;
  /**
   * Where the run's checkpoints go (src/run/run-checkpoint.ts), with the places of its two log files (run.log,
   * log.ndjson) they record; absent: none is written.
   */
  readonly checkpoints?: {
    readonly store: CheckpointStore;
    readonly logs: readonly [LogFileProgress, LogFileProgress];
  };
  /**
   * Continue a run a stopped runner left, instead of starting one: the executor attaches to its Job and pod, and the
   * run goes on from `checkpoint` (its log files already cut to the lengths it records), or, without one (an adopter),
   * from what the pod shows. settings are the plan's; the secrets are read back from the pod.
   */
  readonly resume?: { readonly checkpoint: RunCheckpoint | undefined; readonly secretNames: readonly string[] };
  /**
   * Asked before each action that changes the run: each step's start, the caches' restore and save, the outputs'
   * download, the artifacts' collection, the teardown and the result. When it finds the run another instance's
   * (RunTakenOverError), the run stops there: its presence in the cluster ends, its Job and pod are left to that
   * instance, a notice says so, and runWorkflow rejects with that error instead of building a result. When it cannot
   * tell (InfraError `ownership-unknown`), the run fails with it and its Job is left too, never deleted blind.
   */
  readonly fence?: RunFence;
}

/** The errorReason of a successful run that lacked a required artifact: the workflow's verdict (exit 1), not the infrastructure's. */
export const ARTIFACT_MISSING_REASON = "artifact-missing";

/** The failure class recorded for errors that are not the infrastructure's (exit code 2 or an internal bug). */
export type FailureClass = "input" | "internal";

/**
 * Runs the workflow and resolves with its result; it rejects only for bugs, never for a failed step or cluster, and
 * with RunTakenOverError when its fence found the run taken over by another instance.
 */
export async function runWorkflow(options: RunWorkflowOptions): Promise<RunResult> {
  const { settings } = options;
  const resumeFrom = options.resume?.checkpoint;
  const budget =
    options.outputBudget ?? createOutputBudget(settings.maxLogBytes ?? DEFAULT_MAX_LOG_BYTES, resumeFrom?.logCounts);
  // Masking first, so the budget counts (and every sink sees) only masked text. A resumed run's masker is made
  // once its secrets are read back from the pod.
  let masker = new SecretMasker((settings.secrets ?? []).map((secret) => secret.value));
  const mask = createEventMask(() => masker);
  const emit = createEventEmitter([mask.through(budget.through(fanOut(options.sinks)))]);
  const timings = { ...DEFAULT_TIMINGS, ...options.timings };
  const startedAt = resumeFrom ? new Date(resumeFrom.startedAt) : new Date();
  const { signal, cancel, dispose } = linkRunSignal(
    options.signal,
    startedAt.getTime() +
      settings.timeoutMs +
      timings.runDeadlineGraceMs +
      timings.killGraceSeconds * 1000 -
      Date.now(),
  );
  const cleanup = createCleanupSignal(timings.cancelCleanupMs, options.forceSignal);
  let checkpointer: Checkpointer | undefined;
  const ctx: ExecutorContext = {
    settings,
    timings,
    cluster: options.cluster,
    emit,
    signal,
    requestCancel: cancel,
    cleanupSignal: cleanup.signal,
    onStepOutput: (index, offsets, whole) => checkpointer?.stepOutput(index, offsets, whole),
  };
  const executor = (options.createExecutor ?? ((c: ExecutorContext) => new KubernetesExecutor(c)))(ctx);
  const pass = (action: FencedAction): Promise<void> => options.fence?.(action, signal) ?? Promise.resolve();
  /** Set once the fence found the run another instance's: from then on nothing of the run is touched. */
  let takenOver: RunTakenOverError | undefined;
  /** Set when the teardown left the Job to another instance (or to no one, the fence unable to tell). */
  let left: boolean;
  const { namespace } = settings.target;
  if (!resumeFrom)
    emit({
      kind: "run-start",
      runId: settings.runId,
      jobName: settings.jobName,
      ...(namespace === undefined ? {} : { namespace }),
      image: settings.image,
      steps: settings.steps.map((s) => s.name),
    });
  let steps: StepRecord[] = settings.steps.map((step) => buildSkippedStep(step.name));
  let status: RunStatus = "success";
  let error: { message: string; reason: string } | undefined;
  let report: ExtractReport | undefined;
  const cacheSpecs = settings.caches ?? [];
  const artifactSpecs = settings.artifacts ?? [];
  const cacheDriver = cacheSpecs.length > 0 ? options.cacheDriver?.(executor, emit) : undefined;
  /** The caches' reports once restored; undefined until then (a run that never got there reports none restored). */
  let caches: CacheReport[] | undefined;
  let cachesSaved = false;
  let artifacts: ArtifactReport[] | undefined;
  /** Where the run got to: a cancel once steps have run collects their outputs before teardown. */
  let stage: "setup" | "steps" | "outputs" = "setup";
  let phase: CheckpointPhase = "setup";
  /** What the pod said of the run's capacity and pod wait before the runner stopped (a resumed run's executor did not see them). */
  let before: Pick<RunCheckpoint, "capacity" | "podWaitMs"> = { capacity: null, podWaitMs: null };
  if (options.checkpoints) {
    const { store, logs } = options.checkpoints;
    checkpointer = new Checkpointer({
      store,
      logs,
      maskHolding: () => mask.holding(),
      snapshot: () => ({
        version: 1,
        runId: settings.runId,
        startedAt: startedAt.toISOString(),
        namespace: executor.namespace ?? null,
        pod: executor.pod ? { name: executor.pod.name, node: executor.pod.node } : null,
        capacity: executor.capacity ?? before.capacity,
        podWaitMs: executor.podWaitMs ?? before.podWaitMs,
        phase,
        status,
        ...(error ? { error: { ...error, message: masker.maskText(error.message) } } : {}),
        steps,
        // A path or a store's message may quote a secret: the checkpoint, like the result, has them masked.
        caches: caches ? maskStrings(caches, masker) : null,
        cachesSaved: cachesSaved ? (caches?.length ?? 0) : 0,
        outputs: report ? maskStrings({ ...report, files: [...report.files] }, masker) : null,
        artifacts: maskStrings(artifacts ?? [], masker),
        logCounts: budget.counts(),
      }),
      warn: (message) => emit({ kind: "notice", level: "warning", message }),
    });
  }
  /** Where a resumed run goes on from: the phases before its phase are done. */
  let resumedAt: RunCheckpoint | undefined;
  /** Marks the start of `next`, saved before it acts; false when the run resumed past it (it is done). */
  const enter = async (next: CheckpointPhase): Promise<boolean> => {
    if (resumedAt && CHECKPOINT_PHASES.indexOf(next) < CHECKPOINT_PHASES.indexOf(resumedAt.phase)) return false;
    phase = next;
    // The step a resumed run follows again is the checkpoint's place until its output moves it on.
    await checkpointer?.mark(next === "steps" && resumedAt?.phase === "steps" ? resumedAt.step : null);
    return true;
  };
  try {
    let trees: UploadTrees | undefined;
    if (options.resume) {
      const resumed = await reattach(executor, settings, options.resume, emit);
      resumedAt = resumed.from;
      masker = new SecretMasker(resumed.secrets);
      status = resumedAt.status;
      if (resumedAt.error) error = { ...resumedAt.error };
      steps = [...resumedAt.steps];
      caches = resumedAt.caches ? [...resumedAt.caches] : undefined;
      cachesSaved = caches !== undefined && resumedAt.cachesSaved >= caches.length && resumedAt.phase !== "save";
      artifacts = resumedAt.artifacts.length > 0 ? [...resumedAt.artifacts] : undefined;
      if (resumedAt.outputs) report = resumedAt.outputs;
      before = { capacity: resumedAt.capacity, podWaitMs: resumedAt.podWaitMs };
      phase = resumedAt.phase;
    } else {
      await enter("setup");
      trees = await scanInput(settings, emit);
      await executor.setup();
    }
    if (await enter("upload")) {
      // A resumed run scans again without a phase of its own: its log has the first scan already.
      trees ??= await scanUploadTrees(settings.checkoutDir, settings.sharedStepsDir);
      const cloneInPod = settings.gitCheckout !== undefined && ((await executor.hasGit?.()) ?? false);
      if (settings.gitCheckout && !cloneInPod) trees = await cloneOnHost(settings, settings.gitCheckout, emit, signal);
      await executor.copyIn(trees);
      if (settings.gitCheckout && cloneInPod) await executor.cloneCheckout!(settings.gitCheckout);
    }
    if (cacheSpecs.length > 0 && (await enter("restore"))) {
      await pass({ kind: "restore" });
      caches = await restoreCaches(cacheDriver, cacheSpecs, emit);
    }
    stage = "steps";
    if (await enter("steps")) {
      const resumedStep = resumedAt?.phase === "steps" ? resumedAt.step : null;
      status = await runSteps(executor, settings, steps, startedAt.getTime(), emit, signal, {
        from: resumedStep,
        fence: (index) => pass({ kind: "step", index }),
        beforeStep: (index, started) =>
          checkpointer?.mark({ index, startedAt: started.toISOString(), offsets: null }) ?? Promise.resolve(),
      });
    }
    if (caches && !cachesSaved && (await enter("save"))) {
      // A failed run's paths may be half-built: only a successful run saves (and only what was not an exact hit).
      if (status === "success") await pass({ kind: "save" });
      caches =
        status === "success"
          ? await saveCaches(cacheDriver, cacheSpecs, caches, emit)
          : skipCacheSaves(caches, `the run ${status === "timeout" ? "timed out" : status}`, emit);
      cachesSaved = true;
    }
    stage = "outputs";
    if (await enter("outputs")) {
      await pass({ kind: "outputs" });
      if (resumedAt) await removeOutputs(settings.outDir, "outputs");
      report = await executor.copyOut();
    }
    if (artifactSpecs.length > 0 && (await enter("artifacts"))) {
      await pass({ kind: "artifacts" });
      if (resumedAt) await removeOutputs(settings.outDir, "artifacts");
      artifacts = await collectArtifacts(executor, artifactSpecs, status, settings.maxOutputBytes, emit);
    }
  } catch (thrown) {
    if (thrown instanceof RunTakenOverError) takenOver = thrown;
    else {
      ({ status, error } = classifyFailure(thrown, signal));
      markRunningStep(steps, status === "timeout" || status === "cancelled" ? status : "failed", emit);
      if (status === "cancelled" && stage === "steps" && steps.some((step) => step.startedAt !== null))
        report = await collectOutputsAfterCancel(executor, emit);
    }
  } finally {
    // The verdict before the Job goes: a runner stopped during the teardown ends the run with it, Job or not.
    phase = "teardown";
    await checkpointer?.mark();
    checkpointer?.stop();
    dispose();
    cleanup.dispose();
    // The fence once more before the Job goes (unless it already said the run is not ours to delete).
    const unsure = error?.reason === ("ownership-unknown" satisfies InfraReason) ? error.message : undefined;
    const fenced = takenOver || unsure ? undefined : await passTeardownFence(options.fence, options.forceSignal);
    if (fenced instanceof RunTakenOverError) takenOver = fenced;
    left = takenOver !== undefined || unsure !== undefined || fenced !== undefined;
    if (left) {
      // Not ours to delete, or it cannot tell: the Job and pod stay, only this runner's presence on them ends.
      await executor.leave?.();
      if (fenced && !(fenced instanceof RunTakenOverError))
        ({ status, error } = reportLeftBehind(status, error, fenced.message, "ownership-unknown"));
    } else {
      const torn = await executor.teardown();
      // A Job left behind keeps a paid node alive: never a clean result, whatever the steps did.
      if (torn.leftBehind) ({ status, error } = reportLeftBehind(status, error, torn.detail, torn.reason));
    }
  }
  if (!left) {
    const fenced = await passTeardownFence(options.fence, options.forceSignal, { kind: "result" });
    if (fenced instanceof RunTakenOverError) takenOver = fenced;
  }
  if (takenOver) {
    emit({ kind: "notice", level: "warning", message: takenOver.message });
    throw takenOver;
  }
  if (caches && !cachesSaved)
    caches = skipCacheSaves(
      caches,
      `the run ${status === "cancelled" ? "was cancelled" : "failed"} before its caches could be saved`,
      emit,
    );
  if (!artifacts && artifactSpecs.length > 0)
    artifacts = skipArtifacts(
      artifactSpecs,
      `the run ${status === "cancelled" ? "was cancelled" : "ended with an error"} before its artifacts could be collected`,
      emit,
    );
  const missing = findMissingRequired(artifactSpecs, artifacts ?? []);
  if (missing.length > 0) {
    const message = `required artifact${missing.length === 1 ? "" : "s"} not collected: ${missing.map((a) => `${a.name} (${a.reason ?? a.status})`).join("; ")}`;
    // A run that had succeeded fails on it; one that had already failed keeps its own verdict and says this too.
    if (status === "success" && !error)
      ({ status, error } = { status: "failed", error: { message, reason: ARTIFACT_MISSING_REASON } });
    else
      emit({
        kind: "notice",
        level: "error",
        message: `${message} (the run had already ${status === "timeout" ? "timed out" : status === "success" ? "failed" : status})`,
      });
  }
  for (const refused of report?.refused ?? [])
    emit({ kind: "notice", level: "warning", message: `refused output ${refused.path}: ${refused.reason}` });
  if (report?.limitReached)
    emit({
      kind: "notice",
      level: "warning",
      message: `outputs stopped at the limit of ${settings.maxOutputBytes} bytes; the rest was not downloaded`,
    });
  const result = buildRunResult({
    runId: settings.runId,
    status,
    ...(error ? { error: { ...error, message: masker.maskText(error.message) } } : {}),
    startedAt,
    finishedAt: new Date(),
    job: {
      namespace: executor.namespace ?? "",
      name: settings.jobName,
      pod: executor.pod?.name ?? null,
      node: executor.pod?.node || null,
      image: settings.image,
    },
    ...((executor.capacity ?? before.capacity) ? { capacity: (executor.capacity ?? before.capacity)! } : {}),
    ...((executor.podWaitMs ?? before.podWaitMs) === null || (executor.podWaitMs ?? before.podWaitMs) === undefined
      ? {}
      : { podWaitMs: (executor.podWaitMs ?? before.podWaitMs)! }),
    steps,
    // A step may name a file after a secret: the result lists it masked.
    ...maskOutputPaths(report?.files ?? [], report?.refused ?? [], masker),
    logs: budget.counts(),
    caches: (caches ?? []).map((cache) => maskCacheReport(cache, masker)),
    artifacts: (artifacts ?? []).map((artifact) => maskArtifactReport(artifact, masker)),
    ...(settings.workflow ? { workflow: settings.workflow } : {}),
  });
  emit({
    kind: "run-end",
    status: result.status,
    exitCode: result.exitCode,
    ...(result.error ? { error: result.error } : {}),
    durationMs: result.durationMs,
  });
  return result;
}

type Emit = ReturnType<typeof createEventEmitter>;

/** A cache report with its reasons masked: a store's or kubectl's message could quote anything. */
function maskCacheReport(report: CacheReport, masker: SecretMasker): CacheReport {
  const mask = <T extends { readonly reason?: string }>(part: T): T =>
    part.reason === undefined ? part : { ...part, reason: masker.maskText(part.reason) };
  return { ...report, restore: mask(report.restore), save: mask(report.save) };
}

/** An artifact report with its file paths and reason masked, as the outputs' paths are: a step may name a file after a secret. */
function maskArtifactReport(report: ArtifactReport, masker: SecretMasker): ArtifactReport {
  if (masker.isEmpty) return report;
  return {
    ...report,
    files: report.files.map((file) => ({ ...file, path: masker.maskText(file.path) })),
    ...(report.reason === undefined ? {} : { reason: masker.maskText(report.reason) }),
  };
}

/** One sink that hands each event to every sink, in order: what the budget (and any transform before it) emits into. */
function fanOut(sinks: readonly RunEventSink[]): RunEventSink {
  return (event: RunEvent) => {
    for (const sink of sinks) sink(event);
  };
}

/**
 * The "scan" phase: lists the checkout and the shared steps and checks that every file can be read, before the
 * Job exists, so a bad tree fails the run as bad input without a single kubectl call (a ScanError is an InputError).
 */
/**
 * The "clone" phase on the host, for an image without git: the commit cloned into settings.checkoutDir, then the
 * trees scanned again for the upload. A failed clone is InfraError "checkout-failed".
 */
async function cloneOnHost(
  settings: RunSettings,
  spec: NonNullable<RunSettings["gitCheckout"]>,
  emit: Emit,
  signal: AbortSignal,
): Promise<UploadTrees> {
  const depth = `depth ${spec.depth}${spec.submodules ? ", with submodules" : ""}`;
  await runTimedPhase(
    emit,
    "clone",
    async () => {
      if (!spec.host)
        throw new InfraError(
          "checkout-failed",
          "the image has no git and this runner has no git of its own to clone with",
        );
      try {
        await cloneAtSha(spec, settings.checkoutDir, spec.host, signal);
      } catch (error) {
        if (signal.aborted || !(error instanceof GitCheckoutError)) throw error;
        throw new InfraError("checkout-failed", `${error.message} (cloning on the host: the image has no git)`);
      }
    },
    () => `cloned ${spec.url} at ${spec.sha} on the host, the image having no git (${depth})`,
  );
  return scanInput(settings, emit);
}

function scanInput(settings: RunSettings, emit: Emit): Promise<UploadTrees> {
  return runTimedPhase(
    emit,
    "scan",
    () => scanUploadTrees(settings.checkoutDir, settings.sharedStepsDir),
    describeTrees,
  );
}

function describeTrees(trees: UploadTrees): string {
  const count = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;
  const describe = (what: string, tree: TreeScan): string =>
    `${what} ${count(tree.entries, "entry", "entries")} (${count(tree.files, "file", "files")}, ${count(tree.dirs, "directory", "directories")}, ${count(tree.symlinks, "symlink", "symlinks")})`;
  return [describe("checkout", trees.work), ...(trees.steps ? [describe("shared steps", trees.steps)] : [])].join("; ");
}

/** Where runSteps begins and what it is told before each step it starts. */
interface StepHooks {
  /** A resumed run's step: its start, and the offsets its output was relayed to (null: started again from scratch). */
  readonly from: RunCheckpoint["step"] | undefined;
  /** Before step `index` starts (its step-start event): its checkpoint, awaited. */
  readonly beforeStep: (index: number, started: Date) => Promise<void>;
  /** Before step `index` is started or followed: the run's fence, which throws when the run is not ours to drive. */
  readonly fence: (index: number) => Promise<void>;
}

/**
 * Runs every step in order until one does not succeed; returns the run status the steps decided. A resumed run
 * begins at its checkpoint's step, the earlier ones' entries already in `steps`.
 */
async function runSteps(
  executor: Executor,
  settings: RunSettings,
  steps: StepRecord[],
  runStartedAt: number,
  emit: Emit,
  signal: AbortSignal,
  hooks: StepHooks,
): Promise<RunStatus> {
  const runDeadline = runStartedAt + settings.timeoutMs;
  const first = hooks.from?.index ?? 0;
  for (const [index, spec] of settings.steps.entries()) {
    if (index < first) continue;
    if (signal.aborted) throw new CancelledError();
    if (Date.now() >= runDeadline) return "timeout";
    await hooks.fence(index);
    const resumed = index === first ? hooks.from : undefined;
    const started = resumed ? new Date(resumed.startedAt) : new Date();
    const deadline = Math.min(
      runDeadline,
      stepBudget(spec, settings) ? started.getTime() + stepBudget(spec, settings)! : Infinity,
    );
    steps[index] = { ...steps[index]!, status: "cancelled", startedAt: started.toISOString() }; // until it ends
    // A step the stopped runner had started and relayed output of: its step-start is in the log already.
    if (!resumed?.offsets) {
      await hooks.beforeStep(index, started);
      emit({ kind: "step-start", index, name: spec.name, command: spec.script });
    }
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
      emit({
        kind: "step-end",
        index,
        name: spec.name,
        status: record.status,
        exitCode: record.exitCode,
        durationMs: record.durationMs,
        timedOut: record.timedOut,
      });
    };
    let outcome: StepOutcome;
    try {
      outcome = resumed?.offsets
        ? await executor.runStep(index, deadline, resumed.offsets)
        : await executor.runStep(index, deadline);
    } catch (error) {
      // The step's time was up and stopping it failed (the kill not confirmed, the pod lost): the run fails on
      // that error, and the step's own entry still says what happened to it.
      if (error instanceof InfraError && Date.now() >= deadline)
        end({ status: "timeout", exitCode: null, timedOut: true });
      throw error;
    }
    end(outcome);
    if (outcome.status !== "success") return outcome.status === "timeout" ? "timeout" : "failed";
  }
  return "success";
}

/**
 * Attaches to the run's Job and pod, reads the secrets back and decides where the run goes on (src/run/plan-resume.ts);
 * says so in one notice. Throws InfraError runner-lost when it cannot go on.
 */
async function reattach(
  executor: Executor,
  settings: RunSettings,
  resume: NonNullable<RunWorkflowOptions["resume"]>,
  emit: Emit,
): Promise<{ from: RunCheckpoint; secrets: string[] }> {
  if (!executor.attach) throw new InfraError("runner-lost", "this executor cannot re-attach to a run");
  let attached: Awaited<ReturnType<NonNullable<Executor["attach"]>>>;
  try {
    attached = await executor.attach(resume.checkpoint?.pod?.name);
  } catch (error) {
    // Stopped during the teardown: the run's verdict is in the checkpoint, and its Job may be gone already.
    if (resume.checkpoint?.phase !== "teardown" || !(error instanceof InfraError) || error.reason !== "runner-lost")
      throw error;
    emit({
      kind: "notice",
      level: "info",
      message: `the runner stopped during the run's teardown and its Job is gone: the run ends as it had (${describeError(error)})`,
    });
    return { from: resume.checkpoint, secrets: [] };
  }
  const decision = planResume({
    checkpoint: resume.checkpoint,
    state: attached.state,
    runId: settings.runId,
    stepNames: settings.steps.map((step) => step.name),
    secretNames: resume.secretNames,
    secretsRead: resume.secretNames.filter((name) => attached.secrets.some((secret) => secret.name === name)).length,
    limitBytes: settings.maxLogBytes ?? DEFAULT_MAX_LOG_BYTES,
    now: new Date(),
  });
  if (decision.kind === "lost")
    throw new InfraError(
      "runner-lost",
      `the runner stopped and its run could not be re-attached to: ${decision.message}`,
    );
  if (!resume.checkpoint)
    emit({
      kind: "run-start",
      runId: settings.runId,
      jobName: settings.jobName,
      ...(settings.target.namespace === undefined ? {} : { namespace: settings.target.namespace }),
      image: settings.image,
      steps: settings.steps.map((s) => s.name),
    });
  emit({
    kind: "notice",
    level: "info",
    message: `re-attached to pod ${attached.pod.name} of Job ${settings.jobName} after the runner stopped: going on ${decision.where}`,
  });
  return { from: decision.from, secrets: attached.secrets.map((secret) => secret.value) };
}

/** Removes what an interrupted download or collection left under the run's directory, before it is made again. */
async function removeOutputs(outDir: string, what: "outputs" | "artifacts"): Promise<void> {
  await rm(join(outDir, what), { recursive: true, force: true });
}

/** A step's budget: its own timeout, else the run's step timeout, else none (the run's deadline still holds). */
function stepBudget(spec: StepSpec, settings: RunSettings): number | undefined {
  return spec.timeoutMs ?? settings.stepTimeoutMs;
}

/**
 * After a cancel, collects what the steps wrote to /outputs (the executor runs copyOut under the clean-up signal);
 * a failure is a warning: the run is cancelled either way.
 */
async function collectOutputsAfterCancel(executor: Executor, emit: Emit): Promise<ExtractReport | undefined> {
  try {
    return await executor.copyOut();
  } catch (error) {
    emit({
      kind: "notice",
      level: "warning",
      message: `the outputs could not be collected after the cancel: ${describeError(error)}`,
    });
    return undefined;
  }
}

/**
 * The clean-up signal of a cancelled run, made on first use: aborted `ms` after that, or when `force` is. The same
 * signal on every call.
 */
function createCleanupSignal(
  ms: number,
  force: AbortSignal | undefined,
): { signal: () => AbortSignal; dispose: () => void } {
  let controller: AbortController | undefined;
  let timer: NodeJS.Timeout | undefined;
  const onForce = (): void => controller?.abort(new CancelledError("the clean-up of the cancelled run was cut short"));
  return {
    signal: () => {
      if (controller) return controller.signal;
      controller = new AbortController();
      timer = setTimeout(
        () =>
          controller?.abort(
            new CancelledError(`the clean-up of the cancelled run took more than ${Math.round(ms / 1000)}s`),
          ),
        Math.min(ms, 2_147_483_647),
      );
      if (force?.aborted) onForce();
      else force?.addEventListener("abort", onForce, { once: true });
      return controller.signal;
    },
    dispose: () => {
      clearTimeout(timer);
      force?.removeEventListener("abort", onForce);
    },
  };
}

/** The run's own time ran out outside a step. */
class RunDeadlineError extends Error {
  override readonly name = "RunDeadlineError";
}

/**
 * A signal aborted by the caller's cancel, by a cancel requested through the cluster (`cancel`, which the executor
 * calls) or by the run's backstop deadline, whichever comes first.
 */
function linkRunSignal(
  cancel: AbortSignal,
  deadlineMs: number,
): { signal: AbortSignal; cancel: (reason: CancelledError) => void; dispose: () => void } {
  const controller = new AbortController();
  const onCancel = (): void => controller.abort(cancel.reason);
  if (cancel.aborted) onCancel();
  cancel.addEventListener("abort", onCancel, { once: true });
  const timer = setTimeout(
    () =>
      controller.abort(
        new RunDeadlineError(`the run's timeout of ${Math.round(deadlineMs / 1000)}s (with grace) ran out`),
      ),
    Math.min(deadlineMs, 2_147_483_647),
  );
  return {
    signal: controller.signal,
    cancel: (reason) => {
      if (!controller.signal.aborted) controller.abort(reason);
    },
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
 * one is failed: exit 3), or `forbidden`/`unauthorized` when the API server refused the delete; a run that already
 * has an error keeps it and says this too.
 */
function reportLeftBehind(
  status: RunStatus,
  error: { message: string; reason: string } | undefined,
  detail: string,
  refused: InfraReason | undefined,
): { status: RunStatus; error: { message: string; reason: string } } {
  if (error) return { status, error: { ...error, message: `${error.message}; also: ${detail}` } };
  return {
    status: status === "success" ? "failed" : status,
    error: { message: detail, reason: refused ?? "teardown-failed" },
  };
}

/** Maps what stopped the run to its status and error: the only place that reads error types for the result. */
function classifyFailure(
  thrown: unknown,
  signal: AbortSignal,
): { status: RunStatus; error: { message: string; reason: string } } {
  if (signal.reason instanceof RunDeadlineError)
    return { status: "timeout", error: { message: signal.reason.message, reason: "run-timeout" } };
  // Stopped by its caller for a failure of the runner's own (its disk full): failed, not cancelled.
  if (signal.reason instanceof InfraError)
    return { status: "failed", error: { message: signal.reason.message, reason: signal.reason.reason } };
  if (thrown instanceof CancelledError || signal.aborted) {
    const reason = signal.reason instanceof Error ? signal.reason.message : "the run was cancelled";
    return { status: "cancelled", error: { message: reason, reason: "cancelled" } };
  }
  if (thrown instanceof InfraError)
    return { status: "failed", error: { message: thrown.message, reason: thrown.reason } };
  if (thrown instanceof InputError)
    return { status: "failed", error: { message: thrown.message, reason: "input" satisfies FailureClass } };
  return {
    status: "failed",
    error: { message: `internal error: ${describeError(thrown)}`, reason: "internal" satisfies FailureClass },
  };
}

/**
 * Asks the fence before the teardown (or the result): undefined when the run is still this runner's, the
 * RunTakenOverError when another instance owns it, or the InfraError (`ownership-unknown`) when it could not tell,
 * in which case nothing is deleted. Bounded by the fence itself; `force` cuts it short (then it could not tell).
 */
async function passTeardownFence(
  fence: RunFence | undefined,
  force: AbortSignal | undefined,
  action: FencedAction = { kind: "teardown" },
): Promise<RunTakenOverError | InfraError | undefined> {
  if (!fence) return undefined;
  try {
    await fence(action, force ?? new AbortController().signal);
    return undefined;
  } catch (error) {
    if (error instanceof RunTakenOverError) return error;
    if (error instanceof InfraError && error.reason === "ownership-unknown") return error;
    return new InfraError(
      "ownership-unknown",
      `could not tell whether another instance took the run over before ${describeFencedAction(action)} (${describeError(error)}): its Job is left untouched`,
    );
  }
}
