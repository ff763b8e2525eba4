// Runs one run a service took (serve, the mill executor) through launchRun with its own controllers, the service's sinks and the checkout it made; keeps the executor for a crash's teardown.
import { mkdirSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { createEventEmitter, type RunEventInput, type RunEventSink } from "../events/run-events.js";
import type { ExecutorContext, ExecutorTimings } from "../executor/kubernetes/context.js";
import type { CrashTeardown, Executor, ExecutorCrashPath } from "../executor/executor.js";
import type { RunCluster } from "../cluster/cluster.js";
import type { RunResult } from "../run/run-result.js";
import type { RunSettings } from "../executor/kubernetes/context.js";
import type { GitCheckoutSpec, GitSetting } from "../transfer/git-checkout.js";
import type { CheckpointStore } from "./run-checkpoint.js";
import type { RunWorkflowOptions } from "./run-workflow.js";
import { launchRun, openRunLogFiles } from "./launch.js";
import { KubernetesExecutor } from "../executor/kubernetes/kubernetes-executor.js";

export interface SuperviseOptions {
  readonly settings: RunSettings;
  readonly cluster: RunCluster;
  readonly timings?: Partial<ExecutorTimings>;
  /** The service's sinks (the live log feed, metrics), after the run's own log files. */
  readonly sinks: readonly RunEventSink[];
  /** The executor of the run: the Kubernetes one unless a test scripts its own. */
  readonly createExecutor?: (ctx: ExecutorContext) => Executor;
  /** A checkout to clone at one commit, in the pod when its image has git, else on the host into settings.checkoutDir (a failed clone fails the run: checkout-failed). */
  readonly git?: { readonly spec: GitCheckoutSpec; readonly setting: GitSetting };
  /** The workflow's warnings (what the runner configuration's limits clamped), each logged as a warning notice first. */
  readonly warnings?: readonly string[];
  /**
   * Told of a log file that could not be written. A full disk stops the run (`failed`, reason disk-full, its Job
   * deleted); another failure leaves it going, its verdict unchanged.
   */
  readonly warn: (message: string) => void;
  /** Told log.ndjson's length each time more whole lines are in the file: where its followers may read up to. */
  readonly onLogWritten?: (length: number) => void;
  /**
   * Runs `work` with the cluster calls it makes told to `emit` (the run's log): the service's one cluster is shared
   * by every run. Absent, the run's log records no cluster call.
   */
  readonly withClusterCalls?: <T>(emit: (event: RunEventInput) => void, work: () => Promise<T>) => Promise<T>;
  /** Where the run's checkpoints go (serve's database); absent: none. */
  readonly checkpoints?: CheckpointStore;
  /**
   * Continue a run a stopped runner left (launchRun's `resume`): its log files are cut to the checkpoint's lengths
   * (started empty without a checkpoint), and the executor attaches to its Job instead of creating one.
   */
  readonly resume?: RunWorkflowOptions["resume"];
  /** Asked before each action that changes the run (serve's ownership fence, src/serve/run-fence.ts); absent: none. */
  readonly fence?: RunWorkflowOptions["fence"];
}

/** A run being supervised. */
export interface SupervisedRun {
  /** Abort with a CancelledError to cancel the run as `cancel` does: step stopped, outputs collected, Job deleted. */
  readonly controller: AbortController;
  /** Abort after `controller` to skip the cancelled run's clean-up and go straight to the Job's deletion. */
  readonly force: AbortController;
  /**
   * Resolves with the result once result.json is written and the log files are closed; rejects only for a bug, a
   * result.json that cannot be written (a full disk: an error isDiskFullError knows), or RunTakenOverError (the
   * fence found the run another instance's: its Job and pod were left to it, and no result.json was written).
   */
  readonly done: Promise<RunResult>;
  /** For a crashing service: deletes the run's Job synchronously (the event loop can no longer be trusted). */
  teardownNowSync(timeoutMs: number): CrashTeardown;
  /**
   * For a crashing service that leaves the run's Job for the next start to re-attach to: stops its heartbeat and
   * cancel watch and removes the files staged on this host, at once; the Job and pod stay. Never throws.
   */
  leaveNowSync(): void;
}

/** Starts the run; its files go under settings.outDir (run.log, log.ndjson, result.json, outputs/, artifacts/). */
export function superviseRun(options: SuperviseOptions): SupervisedRun {
  const controller = new AbortController();
  const force = new AbortController();
  let executor: (Executor & Partial<ExecutorCrashPath>) | undefined;
  const done = (async (): Promise<RunResult> => {
    const settings = options.git
      ? { ...options.settings, gitCheckout: { ...options.git.spec, host: options.git.setting } }
      : options.settings;
    mkdirSync(settings.outDir, { recursive: true });
    // An empty /work to upload: for a workflow that skips the checkout, and for one cloned in the pod.
    if (options.git || settings.checkoutDir === join(settings.outDir, "empty-checkout"))
      mkdirSync(settings.checkoutDir, { recursive: true });
    const logs = openRunLogFiles(
      settings.outDir,
      { controller, force },
      options.onLogWritten,
      options.resume?.checkpoint?.logs,
    );
    const make = options.createExecutor ?? ((ctx: ExecutorContext) => new KubernetesExecutor(ctx));
    try {
      const emit = createEventEmitter([...logs.map((log) => log.sink), ...options.sinks]);
      if (!options.resume)
        for (const message of options.warnings ?? []) emit({ kind: "notice", level: "warning", message });
      return await launchRun({
        settings,
        cluster: options.cluster,
        controller,
        force,
        logs,
        sinks: options.sinks,
        ...(options.timings ? { timings: options.timings } : {}),
        createExecutor: (ctx) => (executor = make(ctx)),
        ...(options.withClusterCalls ? { withClusterCalls: options.withClusterCalls } : {}),
        ...(options.checkpoints ? { checkpoints: options.checkpoints } : {}),
        ...(options.resume ? { resume: options.resume } : {}),
        ...(options.fence ? { fence: options.fence } : {}),
        warn: (message) => options.warn(`run ${settings.runId}: ${message}`),
      });
    } finally {
      // A checkout the service made (a clone, an empty /work) is the run's input, not its record: gone once the run is.
      if (options.git || settings.checkoutDir === join(settings.outDir, "empty-checkout"))
        await rm(settings.checkoutDir, { recursive: true, force: true }).catch(() => undefined);
    }
  })();
  return {
    controller,
    force,
    done,
    teardownNowSync: (timeoutMs) =>
      executor?.teardownNowSync?.(timeoutMs) ?? { detail: "no Job of this run was created", mayBeLeft: false },
    leaveNowSync: () => {
      executor?.stopPresenceSync?.();
      executor?.removeStagedFilesSync?.();
    },
  };
}
