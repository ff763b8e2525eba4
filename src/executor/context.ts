// What every part of the Kubernetes executor is handed: typed settings, the kubectl client, the event emitter.
import type { RunEventInput } from "../events/run-events.js";
import type { ClusterTarget } from "../k8s/kubectl-args.js";
import type { Kubectl } from "../k8s/kubectl.js";
import type { StepSpec } from "../input/steps-file.js";
import type { HostTarSetting } from "../transfer/host-tar.js";
import type { RetryPolicy } from "../util/retry.js";

export interface ExecutorSettings {
  readonly runId: string;
  readonly jobName: string;
  readonly runIdLabel: string;
  readonly target: ClusterTarget;
  readonly image: string;
  readonly cpu: string;
  readonly memory: string;
  readonly steps: readonly StepSpec[];
  /** Non-secret environment of every step. */
  readonly env: ReadonlyArray<{ readonly name: string; readonly value: string }>;
  readonly checkoutDir: string;
  readonly sharedStepsDir?: string;
  readonly outDir: string;
  readonly timeoutMs: number;
  readonly podTimeoutMs: number;
  readonly maxOutputBytes: number;
  readonly keep: boolean;
  /**
   * The host tar that packs the upload when it is GNU tar 1.29 or later (probed once per process), and the
   * environment it runs with; absent, or not such a tar, and the runner's own packer streams the archive through
   * node instead.
   */
  readonly hostTar?: HostTarSetting;
  /**
   * Before creating the Job, look for a warm placeholder whose requests cover the run's and claim it (delete it), so
   * the pod lands on the node it held (default true: one list call per run, and a delete when one is there).
   */
  readonly claimWarm?: boolean;
  /**
   * After the Job is deleted, leave a warm placeholder of the run's size and image that holds the node for `seconds`
   * (`run --keep-warm`), unless the namespace has `maxWarm` placeholders already; absent: none is left.
   */
  readonly keepWarm?: { readonly seconds: number; readonly maxWarm: number };
}

/** Timings the runner uses; tests shorten them. */
export interface ExecutorTimings {
  /** An image pull failure must persist this long before the run fails (pulls can recover). */
  readonly imagePullGraceMs: number;
  /** How long exec may keep failing with "unable to upgrade connection" on a fresh node. */
  readonly execReadyBudgetMs: number;
  /** Attempts and backoff of the exec retries while the node refuses exec upgrades; their time budget is execReadyBudgetMs. */
  readonly execReadyRetry: Omit<RetryPolicy, "budgetMs">;
  /** Creating the Job: how long and how often a transient API failure or an unreachable cluster is retried. */
  readonly createRetry: RetryPolicy;
  /** Reconnects without progress before an exec that never reports an exit code counts as an infrastructure failure. */
  readonly reconnectRetry: RetryPolicy;
  /** Kill execs of a timed-out step that ended without the pod's confirmation, run again (a kill is idempotent). */
  readonly killRetry: RetryPolicy;
  /** Deleting the Job at teardown: how long and how often a transient API failure or an unreachable cluster is retried. */
  readonly deleteRetry: RetryPolicy;
  /** Seconds between SIGTERM and SIGKILL for a timed-out step's processes. */
  readonly killGraceSeconds: number;
  /** How long a step's kubectl may linger after the step's exit code arrived before it is stopped. */
  readonly execLingerMs: number;
  /** Poll intervals while waiting for the pod. */
  readonly podPollMs: readonly number[];
  /** While waiting for the pod: its (or, before it exists, the Job's) events are first read this long after the wait began... */
  readonly podEventsAfterMs: number;
  /** ...and then at most this often (each read is one more API call). */
  readonly podEventsEveryMs: number;
  /** Pending progress that has not changed is reported again this often, so a long wait still shows signs of life. */
  readonly podProgressRepeatMs: number;
  /**
   * Steps end at the run's deadline on their own (their processes killed); a backstop this much later (plus the
   * kill grace) stops whatever else overran the run's timeout, such as the upload or download of a huge tree.
   */
  readonly runDeadlineGraceMs: number;
}

export const DEFAULT_TIMINGS: ExecutorTimings = {
  imagePullGraceMs: 20_000,
  execReadyBudgetMs: 60_000,
  execReadyRetry: { maxAttempts: 30, initialDelayMs: 500, maxDelayMs: 5000 },
  createRetry: { budgetMs: 60_000, maxAttempts: 5, initialDelayMs: 1000, maxDelayMs: 8000 },
  reconnectRetry: { budgetMs: 60_000, maxAttempts: 6, initialDelayMs: 500, maxDelayMs: 5000 },
  killRetry: { budgetMs: 60_000, maxAttempts: 3, initialDelayMs: 500, maxDelayMs: 2000 },
  deleteRetry: { budgetMs: 30_000, maxAttempts: 4, initialDelayMs: 1000, maxDelayMs: 4000 },
  killGraceSeconds: 5,
  execLingerMs: 5000,
  podPollMs: [250, 250, 250, 250, 500, 500, 1000, 1000, 2000],
  podEventsAfterMs: 1000,
  podEventsEveryMs: 4000,
  podProgressRepeatMs: 10_000,
  runDeadlineGraceMs: 30_000,
};

export interface ExecutorContext {
  readonly settings: ExecutorSettings;
  readonly timings: ExecutorTimings;
  readonly kubectl: Kubectl;
  readonly emit: (event: RunEventInput) => void;
  /** Aborted when the run is cancelled. */
  readonly signal: AbortSignal;
}
