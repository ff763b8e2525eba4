// One path from "a run was asked for" to "its result is written", whoever asks (the `run` command, the service): the
// run's log files, its cache driver, runWorkflow, result.json, the logs closed. The callers differ only in where the
// request comes from and where else the events go.
import { join } from "node:path";
import { isDiskFullError, makeDiskFullError } from "../core/disk-full.js";
import { describeError } from "../core/errors.js";
import type { RunCluster } from "../cluster/cluster.js";
import type { LogWriteError } from "../events/log-file.js";
import type { OutputBudget } from "../events/output-budget.js";
import { createEventEmitter, type RunEventInput, type RunEventSink } from "../events/run-events.js";
import { createHumanLogSink, createNdjsonLogSink, type ClosableSink } from "../events/sinks.js";
import type { Executor } from "../executor/executor.js";
import type { ExecutorContext, ExecutorTimings } from "../executor/kubernetes/context.js";
import type { RunSettings } from "../executor/kubernetes/context.js";
import { openCacheDriver } from "../cache/open-cache-driver.js";
import { writeResultFile } from "./result-file.js";
import type { RunResult } from "./run-result.js";
import { runWorkflow, type RunWorkflowOptions } from "./run-workflow.js";
import type { CheckpointStore } from "./run-checkpoint.js";

/** How a run is stopped: `controller` cancels it (its clean-up runs), `force` then skips the clean-up. */
export interface RunControls {
  readonly controller: AbortController;
  readonly force: AbortController;
}

export interface LaunchOptions extends RunControls {
  readonly settings: RunSettings;
  readonly cluster: RunCluster;
  /** The run's closable sinks (its log files first, then a console): fed first, closed once the run is over. */
  readonly logs: readonly ClosableSink[];
  /** Further sinks, after the logs (a crash's step tracker, the service's live feed and metrics). */
  readonly sinks?: readonly RunEventSink[];
  readonly outputBudget?: OutputBudget;
  readonly timings?: Partial<ExecutorTimings>;
  readonly createExecutor: (ctx: ExecutorContext) => Executor;
  /**
   * Runs `work` with the cluster calls it makes told to `emit` (the run's log files): for a cluster shared by several
   * runs. Absent, the calls go where the cluster was told when it was opened.
   */
  readonly withClusterCalls?: <T>(emit: (event: RunEventInput) => void, work: () => Promise<T>) => Promise<T>;
  /** Told of the result before result.json is written: what a caller still has when writing it fails. */
  readonly onFinished?: (result: RunResult) => void;
  /** Told of a log that could not be written or closed: the run's verdict does not change. */
  readonly warn: (message: string) => void;
  /** Where the run's checkpoints go (with `logs` from openRunLogFiles: run.log, then log.ndjson); absent: none. */
  readonly checkpoints?: CheckpointStore;
  /**
   * Continue a run a stopped runner left (runWorkflow's `resume`): `logs` opened at the checkpoint's lengths
   * (openRunLogFiles' `resumeAt`), settings the plan's (src/run/run-plan.ts) with the checkpoint's namespace.
   */
  readonly resume?: RunWorkflowOptions["resume"];
  /** Asked before each action that changes the run (runWorkflow's `fence`); absent: none. */
  readonly fence?: RunWorkflowOptions["fence"];
}

/**
 * The run's two log files under `outDir`: run.log for people (every cluster call in it), log.ndjson for programs
 * (`onWritten` told its length each time more whole lines are in it). A full disk stops the run (failed, disk-full)
 * instead of letting it run on with nothing recorded: `controller` is aborted with the disk-full error, then `force`,
 * for nothing the run collected could be written.
 */
export function openRunLogFiles(
  outDir: string,
  controls: RunControls,
  onWritten?: (length: number) => void,
  resumeAt?: { readonly runLog: number; readonly ndjson: number },
): ClosableSink[] {
  const onWriteFailure = (error: LogWriteError): void => {
    if (!isDiskFullError(error)) return;
    if (!controls.controller.signal.aborted) controls.controller.abort(makeDiskFullError(error));
    controls.force.abort();
  };
  return [
    createHumanLogSink(join(outDir, "run.log"), {
      clusterCalls: true,
      onWriteFailure,
      ...(resumeAt ? { resumeAt: resumeAt.runLog } : {}),
    }),
    createNdjsonLogSink(join(outDir, "log.ndjson"), {
      onWriteFailure,
      ...(onWritten ? { onWritten } : {}),
      ...(resumeAt ? { resumeAt: resumeAt.ndjson } : {}),
    }),
  ];
}

/**
 * Runs the workflow of `settings` on `cluster`, its caches through the store the settings name, and writes result.json
 * into settings.outDir; closes `logs` whatever happened. Resolves with the result; rejects only for a bug, a
 * result.json that cannot be written (a full disk: an error isDiskFullError knows), or RunTakenOverError when the
 * fence found the run taken over by another instance (then no result.json is written: the result is that instance's).
 */
export async function launchRun(options: LaunchOptions): Promise<RunResult> {
  const { cluster } = options;
  const pinned = options.resume?.checkpoint?.namespace;
  const settings =
    pinned && options.settings.target.namespace !== pinned
      ? { ...options.settings, target: { ...options.settings.target, namespace: pinned } }
      : options.settings;
  // The two log files among the logs (a console has none): run.log, then log.ndjson, as openRunLogFiles opens them.
  const [runLog, ndjson] = options.logs.flatMap((log) => (log.file ? [log.file] : []));
  try {
    const backend = (settings.caches?.length ?? 0) > 0 ? settings.cacheBackend : undefined;
    const run = (): Promise<RunResult> =>
      runWorkflow({
        settings,
        cluster,
        signal: options.controller.signal,
        forceSignal: options.force.signal,
        sinks: [...options.logs.map((log) => log.sink), ...(options.sinks ?? [])],
        ...(options.outputBudget ? { outputBudget: options.outputBudget } : {}),
        ...(options.timings ? { timings: options.timings } : {}),
        createExecutor: options.createExecutor,
        ...(options.checkpoints && runLog && ndjson
          ? { checkpoints: { store: options.checkpoints, logs: [runLog, ndjson] as const } }
          : {}),
        ...(options.resume ? { resume: options.resume } : {}),
        ...(options.fence ? { fence: options.fence } : {}),
        ...(backend
          ? {
              cacheDriver: (executor: Executor, emit: (event: RunEventInput) => void) =>
                openCacheDriver(backend, executor, emit, { cluster, target: settings.target, runId: settings.runId }),
            }
          : {}),
      });
    const emitCall = createEventEmitter(options.logs.map((log) => log.sink));
    const result = await (options.withClusterCalls ? options.withClusterCalls(emitCall, run) : run());
    options.onFinished?.(result);
    await writeResultFile(join(settings.outDir, "result.json"), result);
    return result;
  } finally {
    for (const closed of await Promise.allSettled(options.logs.map((log) => log.close()))) {
      if (closed.status === "rejected") options.warn(describeError(closed.reason));
    }
  }
}
