// What every part of the Kubernetes executor is handed: typed settings, the cluster, the event emitter.
import type { WorkflowSummary } from "../../workflow/workflow-summary.js";
import type { GitCheckoutSpec, GitSetting } from "../../transfer/git-checkout.js";
import type { PodSpecConfig } from "../../manifests/pod-spec-config.js";
import type { CancelledError } from "../../core/errors.js";
import type { RunEventInput } from "../../events/run-events.js";
import type { ClusterTarget } from "../../cluster/cluster.js";
import { RUN_CONTAINER } from "../../manifests/names.js";
import { BEAT_SECONDS } from "../../pod/keep-alive.js";
import type { RunCluster } from "../../cluster/cluster.js";
import type { ProcessIdentity } from "../../manifests/owner.js";
import type { StepSpec } from "../../workflow/steps-file.js";
import type { ArtifactSpec } from "../../workflow/artifact-types.js";
import type { CacheSpec } from "../../workflow/cache-types.js";
import type { HostTarSetting } from "../../transfer/host-tar.js";
import type { RetryPolicy } from "../../core/retry.js";
import type { ServiceSpec } from "../../manifests/service-containers.js";

/**
 * One run's settings, the last stage before it runs: everything the run and its executor need, the same for
 * `run`, serve and the mill (src/settings/ builds them; docs/architecture.md, "A run's settings, stage by stage").
 */
export interface RunSettings {
  readonly runId: string;
  readonly jobName: string;
  readonly runIdLabel: string;
  readonly target: ClusterTarget;
  readonly image: string;
  readonly cpu: string;
  readonly memory: string;
  readonly steps: readonly StepSpec[];
  /**
   * Non-secret environment of every step, lowest precedence first (a later entry of the same name wins): the run
   * variables, then the workflow's environment. Reaches the steps through a file in the pod, never the Job manifest.
   */
  readonly env: ReadonlyArray<{ readonly name: string; readonly value: string }>;
  /**
   * The run's secrets: set in every step after everything else (no variable of the run, of `$KNOTLESS_ENV` or of a
   * step can override one). Delivered over an exec's stdin into a memory-backed volume; never in a kubectl
   * argument, a Kubernetes object, the plan, the logs, result.json or a file on this host.
   */
  readonly secrets?: ReadonlyArray<{ readonly name: string; readonly value: string }>;
  /** The steps' shell as plain words, run as `<words> /knotless/steps/N.sh` in /work; default `sh -e`. */
  readonly shell?: string;
  readonly checkoutDir: string;
  readonly sharedStepsDir?: string;
  readonly outDir: string;
  readonly timeoutMs: number;
  readonly podTimeoutMs: number;
  /**
   * The pod stops itself once no runner exec has run for this long (`--pod-idle-timeout`; default 10 min): a runner
   * that died, even by SIGKILL, leaves a pod that ends within it and its poll, not one that holds a node to the deadline.
   */
  readonly podIdleTimeoutMs?: number;
  readonly maxOutputBytes: number;
  /**
   * Most bytes of step output the run's logs keep (DEFAULT_MAX_LOG_BYTES, 64 MiB, when absent; see OutputBudget); also
   * the pod's bound on each of a step's two output files there, past which the helper drops and counts the rest.
   */
  readonly maxLogBytes?: number;
  readonly keep: boolean;
  /**
   * The host tar that packs the upload when it is GNU tar 1.29 or later (probed once per process), and the
   * environment it runs with; absent, or not such a tar, and the runner's own packer streams the archive through
   * node instead.
   */
  readonly hostTar?: HostTarSetting;
  /** The runner process (host name, pid), recorded on the Job as its owner; resolved at the CLI edge. */
  readonly owner?: ProcessIdentity;
  /**
   * Annotations of the caller's on the Job (not its pod), set at create beside the runner's own: serve's owning
   * instance and what an adopter needs to continue the run (src/serve/run-ownership.ts). Never a secret.
   */
  readonly jobAnnotations?: Readonly<Record<string, string>>;
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
  /** The workflow's `caches:`, rendered for this run; absent or empty: no cache is restored or saved. */
  readonly caches?: readonly CacheSpec[];
  /** Where caches live: entries are keyed per `repo` (`--repo`), so one repository's runs never read another's. */
  readonly cacheBackend?: CacheBackend;
  /** The workflow's `artifacts:`, collected after the run into `<outDir>/artifacts/<name>/`. */
  readonly artifacts?: readonly ArtifactSpec[];
  /** The pod's node selector and runtime class (a workflow's `architecture`, the microvm engine's configuration). */
  readonly placement?: { readonly nodeSelector?: Readonly<Record<string, string>>; readonly runtimeClassName?: string };
  /** `virtualisation.docker`: a privileged Docker daemon container of this image beside the steps. */
  readonly dockerDaemon?: { readonly image: string };
  /** The run container's ephemeral-storage request and limit (`pod.ephemeralStorage` of --config); absent: none. */
  readonly ephemeralStorage?: { readonly request?: string; readonly limit?: string };
  /** The workflow's `services:`: containers in the run's pod, each ready before the first step; absent or empty: none. */
  readonly services?: readonly ServiceSpec[];
  /**
   * Guard the run's pod with a PodDisruptionBudget of its own (maxUnavailable 0), created right after the Job and
   * deleted at teardown, so a node drain waits for the run (`pod.disruptionBudget` of --config; buildRunSettings sets
   * it, default true). Absent or false: none.
   */
  readonly disruptionBudget?: boolean;
  /**
   * The operator's pod keys (`pod` of --config: placement, labels, annotations, pull secrets, security profile,
   * podSpecPatch), for the run's pod and its warm placeholders; absent: none, the default hardening.
   */
  readonly pod?: PodSpecConfig;
  readonly stepTimeoutMs?: number;
  /** The workflow file the run came from, for the result (settings/plan-workflow-run.ts); absent for a steps file. */
  readonly workflow?: WorkflowSummary;
  /**
   * A checkout to clone at one commit instead of uploading one: into /work in the pod when its image has git
   * (Tangled's way), else on the host with `host` into `checkoutDir` (an empty directory) before the upload.
   */
  readonly gitCheckout?: GitCheckoutSpec & { readonly host?: GitSetting };
}

/** `--cache-dir` (the default, a directory on this host) or `--cache-pvc` (a PersistentVolumeClaim mounted into the pod). */
export type CacheBackend =
  | { readonly kind: "dir"; readonly repo: string; readonly dir: string; readonly maxBytes: number }
  | { readonly kind: "pvc"; readonly repo: string; readonly claim: string; readonly maxBytes: number };

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
  /**
   * Once a timed-out step's processes are stopped, one follow reads the output it wrote that the killed stream had
   * not relayed yet (on a slow API server, often all of it): that read may take this long.
   */
  readonly timedOutOutputMs: number;
  /** Seconds between SIGTERM and SIGKILL for a timed-out step's processes. */
  readonly killGraceSeconds: number;
  /**
   * Seconds between two beats of a runner exec (the helper's calls, the upload) for the pod's idle guard; the least
   * `--pod-idle-timeout` is three of them. The PVC cache commands keep the default.
   */
  readonly beatSeconds: number;
  /** How long a step's kubectl may linger after the step's exit code arrived before it is stopped. */
  readonly execLingerMs: number;
  /** Poll intervals while waiting for the pod. */
  readonly podPollMs: readonly number[];
  /** While waiting for the pod: its (or, before it exists, the Job's) events are first read this long after the wait began... */
  readonly podEventsAfterMs: number;
  /**
   * How long no node's labels may fail the pod's node selector or affinity, with no autoscaler adding one
   * (TriggeredScaleUp), before the run fails as pod-config; a NotTriggerScaleUp fails it at once.
   */
  readonly unplaceableGraceMs: number;
  /** ...and then at most this often (each read is one more API call). */
  readonly podEventsEveryMs: number;
  /** Pending progress that has not changed is reported again this often, so a long wait still shows signs of life. */
  readonly podProgressRepeatMs: number;
  /**
   * Steps end at the run's deadline on their own (their processes killed); a backstop this much later (plus the
   * kill grace) stops whatever else overran the run's timeout, such as the upload or download of a huge tree.
   */
  readonly runDeadlineGraceMs: number;
  /** How often the run refreshes its heartbeat annotation on the Job (gc takes a run whose heartbeat is stale for abandoned). */
  readonly heartbeatIntervalMs: number;
  /** Restarts of the watch that notices a cancel requested through the cluster, when it ends or fails. */
  readonly cancelWatchRetry: RetryPolicy;
  /**
   * That watch starts once the pod runs, or after this long of waiting for it (a node being rented), whichever is
   * first: its kubectl then does not start beside the create's read-back, the heartbeat's first patch and the pod
   * wait's first read, on the same cores. It GETs the Job first, so a cancel asked for before it started is seen at once.
   */
  readonly cancelWatchAfterMs: number;
  /**
   * After a cancel, how long stopping the step's processes and collecting /outputs may take before teardown
   * deletes the Job regardless. Short enough that a cancel ends the run, its Job deleted, within 15 s.
   */
  readonly cancelCleanupMs: number;
  /**
   * An exec that failed for good into a pod that still looks alive: how long its status may take to say the pod
   * ended (a kubelet reports an eviction after its containers are gone; a loaded node stretches that) before the
   * failure is the exec's.
   */
  readonly podEndLagMs: number;
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
  beatSeconds: BEAT_SECONDS,
  execLingerMs: 5000,
  timedOutOutputMs: 30_000,
  podPollMs: [250, 250, 250, 250, 500, 500, 1000, 1000, 2000],
  podEventsAfterMs: 1000,
  unplaceableGraceMs: 20_000,
  podEventsEveryMs: 4000,
  podProgressRepeatMs: 10_000,
  runDeadlineGraceMs: 30_000,
  heartbeatIntervalMs: 30_000,
  // Never given up while the run lasts: a watch that ends (every few minutes) or fails is started again.
  cancelWatchRetry: {
    budgetMs: Number.POSITIVE_INFINITY,
    maxAttempts: Number.POSITIVE_INFINITY,
    initialDelayMs: 500,
    maxDelayMs: 5000,
  },
  cancelWatchAfterMs: 2000,
  cancelCleanupMs: 10_000,
  podEndLagMs: 10_000,
};

export interface ExecutorContext {
  readonly settings: RunSettings;
  readonly timings: ExecutorTimings;
  /** The cluster's transport; every call names `settings.target.namespace` (pinned once the Job is created). */
  readonly cluster: RunCluster;
  readonly emit: (event: RunEventInput) => void;
  /** Aborted when the run is cancelled. */
  readonly signal: AbortSignal;
  /** Cancels the run as the caller's signal would: how a cancel requested through the cluster reaches it. */
  readonly requestCancel: (reason: CancelledError) => void;
  /**
   * Once the run is cancelled, the signal that bounds the work still done before teardown (stopping the step's
   * processes, collecting /outputs): aborted after cancelCleanupMs, or at once when the caller gives up waiting.
   * The same signal on every call.
   */
  readonly cleanupSignal: () => AbortSignal;
  /**
   * Told after each piece of a step's output was emitted: the bytes of each stream relayed so far, and whether the
   * UTF-8 decoding holds none of them back (then every relayed byte is in the events): where a checkpoint may say
   * the step's output was relayed up to (src/run/checkpointer.ts).
   */
  readonly onStepOutput?: (
    index: number,
    offsets: { readonly stdout: number; readonly stderr: number },
    whole: boolean,
  ) => void;
}

/** The exec request for a command in the run pod's run container, in the run's namespace. */
export function buildPodExec(
  ctx: Pick<ExecutorContext, "settings"> & { readonly signal?: AbortSignal },
  pod: string,
  command: readonly string[],
): { namespace: string | undefined; pod: string; container: string; command: readonly string[]; signal?: AbortSignal } {
  return {
    namespace: ctx.settings.target.namespace,
    pod,
    container: RUN_CONTAINER,
    command,
    ...(ctx.signal ? { signal: ctx.signal } : {}),
  };
}
