// The one seam between the runner and a Kubernetes transport: every call the runner makes, typed, with typed errors (./errors.ts).
//
// Above it nothing builds kubectl arguments or reads a transport's text; below it each transport (./kubectl/, ./api/)
// is one implementation of `Cluster`, the union of the interfaces its consumers take: RunCluster (a run, with
// CrashCluster), PlaceholderCluster and WarmCluster (warm capacity), OpsCluster (list, cancel, gc), DoctorCluster and
// CredentialsCluster. Every method may throw the errors its contract names, ConfigError when the transport cannot use
// the kubeconfig (before any request), UnavailableError or TimeoutError when the cluster cannot answer now, and a
// plain ClusterError ("other") for what no type names; a call whose signal is aborted rejects with whatever the
// transport saw, so a caller that aborts checks its own signal first. No method holds a secret in a request line.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { IEvent } from "kubernetes-models/v1/Event";
import type { IPod } from "kubernetes-models/v1/Pod";
import type { ILease } from "kubernetes-models/coordination.k8s.io/v1/Lease";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import type { ClusterError } from "./errors.js";
import type { ExecRequest, ExecSession } from "./exec.js";

export type { ExecEnd, ExecRequest, ExecSession, ExecStdin } from "./exec.js";

/** Which cluster, as whom, and which namespace: resolved once at the CLI edge, the same for every transport. */
export interface ClusterTarget {
  readonly kubeconfig?: string;
  readonly context?: string;
  /** Pinned with --namespace on every call (but create, when `namespaceFromContext`); absent: kubectl's own choice. */
  readonly namespace?: string;
  /**
   * The namespace is the kubeconfig context's: create leaves it to kubectl (no --namespace, none in the manifest) and
   * the runner reads it back from the created Job, then pins it on every later call. Set by the CLI when no
   * --namespace was given, so a run never parses the kubeconfig itself.
   */
  readonly namespaceFromContext?: boolean;
}

/** A namespace, or undefined for the kubeconfig context's (the transport resolves it; the answer names it). */
export type Namespace = string | undefined;

/** What every call may be given. */
export interface CallOptions {
  /** Aborts the call in flight. */
  readonly signal?: AbortSignal;
  /** Bounds the request on the server's side and the client's (default: the transport's, 30 s). */
  readonly timeoutMs?: number;
}

/** One change of a watched object: the first event of a watch is the object as it is when the watch starts. */
export interface WatchEvent<T> {
  readonly type: "ADDED" | "MODIFIED" | "DELETED";
  readonly object: T;
}

export interface WatchOptions<T> {
  /** Aborting it ends the watch: the promise resolves. */
  readonly signal?: AbortSignal;
  /** Called for every event, in order; an exception thrown here ends the watch with it. */
  readonly onEvent: (event: WatchEvent<T>) => void;
}

/** A watch that a polling transport makes of repeated lists (Cluster.watchPods, Cluster.watchEvents). */
export interface ListedWatchOptions<T> extends WatchOptions<T> {
  /** Called once the objects matching when the watch started have been delivered (ADDED), and after a relist. */
  readonly onSynced?: () => void;
  /** A read that failed but is worth another (a polling transport's): the watch goes on. */
  readonly onRetry?: (error: unknown) => void;
  /** A polling transport's intervals between reads, ms, the last one repeated (default [1000]). */
  readonly pollMs?: readonly number[];
}

/** A watch of pods (Cluster.watchPods). */
export type PodWatchOptions = ListedWatchOptions<IPod>;

/** A watch of one object's events (Cluster.watchEvents). */
export type EventWatchOptions = ListedWatchOptions<IEvent>;

/** The object whose events are read: the pod wait's Pending reasons are a Pod's, or its Job's before the pod exists. */
export interface InvolvedObject {
  readonly kind: "Pod" | "Job";
  readonly name: string;
}

/** A Kubernetes version as the API server's /version says it. */
export interface ServerVersion {
  readonly gitVersion: string;
  readonly major: number;
  readonly minor: number;
}

/** How much of a container's log readContainerLog reads. */
export interface LogBounds {
  readonly tailLines: number;
  readonly limitBytes: number;
}

/** Which transport a cluster is and what it runs on, for doctor and for messages. */
export interface TransportFacts {
  readonly name: "kubectl" | "api";
  /** kubectl: the binary's path or name as configured. */
  readonly binary?: string;
  /** kubectl: its client version (`version --client`); undefined when it did not say. */
  readonly clientVersion?: ServerVersion;
}

/** What apply did to one object: `serviceaccount/NAME` → created, configured or unchanged. */
export type ApplyAction = "created" | "configured" | "unchanged";

/** What applyCredentialObjects did: each object's fate, and the error that stopped it partway, if one did. */
export interface AppliedObjects {
  readonly actions: Map<string, ApplyAction>;
  readonly failure?: ClusterError;
}

/** The three objects of the scoped credential, applied in this order. */
export interface CredentialObjectSet {
  readonly serviceAccount: object;
  readonly role: object;
  readonly roleBinding: object;
}

/** How a synchronous crash-path call ended: never thrown, since the process is going down. */
export type SyncOutcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly why: string };

/**
 * The crash path: for a runner that is going down (the executor's last resort, the CLI's last message). Never throws.
 */
export interface CrashCluster {
  /**
   * For a runner that is crashing (an uncaught exception: the event loop can no longer be trusted): reads a Job
   * synchronously, blocking the process for up to `timeoutMs`. Never throws.
   */
  getJobNowSync(namespace: Namespace, name: string, timeoutMs: number): SyncOutcome<IJob>;

  /** Likewise deletes a Job (background propagation; absent is success) synchronously. Never throws. */
  deleteJobNowSync(namespace: Namespace, name: string, timeoutMs: number): SyncOutcome<"deleted" | "absent">;

  /** The command an operator can run by hand to delete the Job (a kubectl command line, shell-quoted), for messages. */
  formatDeleteJobCommand(namespace: Namespace, name: string): string;
}

/**
 * What a run needs (the Kubernetes executor, its warm claim and --keep-warm, the PVC cache's execs, the services that
 * launch runs): its Job and budget, its pod and the pod's events, execs into it, and the crash path.
 */
export interface RunCluster extends CrashCluster {
  // --- Jobs -------------------------------------------------------------------------------------------------

  /**
   * Creates a Job from its manifest and resolves with the Job as created (its namespace set). With `dryRun`, the
   * server validates and admits it but stores nothing (doctor's probe). Throws AlreadyExistsError (a Job of that name
   * is there), ForbiddenError, UnauthorizedError, InvalidError, NotFoundError (no such namespace), and the common ones;
   * UnreadableAnswerError when the Job was created but where it landed cannot be read from the answer.
   * A create that fails Unavailable or Timeout may have reached the server all the same: read the Job back.
   */
  createJob(namespace: Namespace, job: IJob, options?: CallOptions & { readonly dryRun?: boolean }): Promise<IJob>;

  /** Reads one Job. Throws NotFoundError when there is none, ForbiddenError, UnauthorizedError. */
  getJob(namespace: Namespace, name: string, options?: CallOptions): Promise<IJob>;

  /** Lists the Jobs matching a label selector (`a=b,c`); none is an empty list. Throws ForbiddenError, UnauthorizedError. */
  listJobs(namespace: Namespace, labelSelector: string, options?: CallOptions): Promise<IJob[]>;

  /**
   * Sets annotations on a Job with one JSON merge patch (no read first): the heartbeat, a cancel request, the mark of
   * a kept Job. Throws NotFoundError when the Job is gone, ForbiddenError, UnauthorizedError.
   */
  patchJobAnnotations(
    namespace: Namespace,
    name: string,
    annotations: Readonly<Record<string, string>>,
    options?: CallOptions,
  ): Promise<void>;

  /**
   * Deletes a Job and, in the background, its pods; does not wait for them. Resolves "deleted", or "absent" when
   * there was no such Job (not an error). With `preconditions`, only the object of that uid at that resourceVersion
   * goes (the claim of a warm placeholder): one that changed throws ConflictError, one that is gone is "absent".
   * Throws ForbiddenError, UnauthorizedError.
   */
  deleteJob(
    namespace: Namespace,
    name: string,
    options?: CallOptions & { readonly preconditions?: { readonly uid: string; readonly resourceVersion: string } },
  ): Promise<"deleted" | "absent">;

  /**
   * Watches one Job: `onEvent` gets the Job as it is now (ADDED), then each change, until the signal is aborted or
   * the transport's bound on one watch passes (minutes: a dead connection is noticed by then); both resolve, and the
   * caller starts another watch when it wants more. A Job that is deleted gives a DELETED event. Rejects with
   * NotFoundError (no such Job when it started), ForbiddenError, UnauthorizedError, CutStreamError (a stream that
   * broke or carried something that is not a watch event), and the common ones.
   */
  watchJob(namespace: Namespace, name: string, options: WatchOptions<IJob>): Promise<void>;

  // --- Disruption budgets (policy/v1) -------------------------------------------------------------------------

  /**
   * Creates a PodDisruptionBudget from its manifest (the run's, src/manifests/disruption-budget.ts). Throws
   * AlreadyExistsError (one of that name is there), ForbiddenError, UnauthorizedError, InvalidError, NotFoundError, and
   * the common ones. A create that fails Unavailable or Timeout may have reached the server all the same.
   */
  createDisruptionBudget(namespace: Namespace, budget: IPodDisruptionBudget, options?: CallOptions): Promise<void>;

  /** Deletes one PodDisruptionBudget: "deleted", or "absent" when there was none (not an error). Throws ForbiddenError, UnauthorizedError. */
  deleteDisruptionBudget(namespace: Namespace, name: string, options?: CallOptions): Promise<"deleted" | "absent">;

  // --- Pods and events ---------------------------------------------------------------------------------------

  /** Lists the pods matching a label selector; none is an empty list. Throws ForbiddenError, UnauthorizedError. */
  listPods(namespace: Namespace, labelSelector: string, options?: CallOptions): Promise<IPod[]>;

  /**
   * Watches the pods matching a label selector, for the pod wait: `onEvent` gets each matching pod as it is when the
   * watch starts (ADDED), then each change (DELETED for one that goes), and `onSynced` once the first complete list is
   * delivered; until the signal is aborted (resolves). The API transport serves every such watch of a namespace from
   * the process's one list-watch of its pods of ours (MANAGED_SELECTOR), filtered by the selector here, so 50 waiting
   * runs make one watch rather than 50 polls. The kubectl transport polls listPods behind it on `pollMs` (the
   * intervals between reads, the last one repeated; default 1 s), reporting a read that failed but is worth another
   * try to `onRetry` and going on. Rejects with ForbiddenError, UnauthorizedError, or the transport's final error.
   */
  watchPods(namespace: Namespace, labelSelector: string, options: PodWatchOptions): Promise<void>;

  /** Lists the events of one object (by its kind and name), in no particular order. Throws ForbiddenError, UnauthorizedError. */
  listEvents(namespace: Namespace, involved: InvolvedObject, options?: CallOptions): Promise<IEvent[]>;

  /**
   * Watches the events of one object, for the pod wait's Pending reasons: `onEvent` gets each of its events as it is
   * when the watch starts (ADDED), then each change (MODIFIED when a repeat bumps its count, DELETED when one
   * expires), and `onSynced` once the first complete list is delivered; until the signal is aborted (resolves). The
   * API transport serves every such watch of a namespace and kind from the process's one list-watch of the
   * namespace's events about that kind (field selector `involvedObject.kind`), filtered by name here, so 50 pending
   * runs make one watch rather than 50 event lists every few seconds. The kubectl transport polls listEvents behind it
   * on `pollMs`, as watchPods does. Rejects with ForbiddenError (list or watch on events), UnauthorizedError, or the
   * transport's final error.
   */
  watchEvents(namespace: Namespace, involved: InvolvedObject, options: EventWatchOptions): Promise<void>;

  /**
   * Reads the end of one container's log (stdout and stderr as the kubelet keeps them): at most `tailLines` lines and
   * `limitBytes` bytes, asked of the server and cut by the transport as well, so a service printing without end costs
   * a bounded read. Throws NotFoundError (no such pod), ForbiddenError (pods/log), and a plain ClusterError when the
   * container has not started yet.
   */
  readContainerLog(
    namespace: Namespace,
    pod: string,
    container: string,
    bounds: LogBounds,
    options?: CallOptions,
  ): Promise<string>;

  // --- Exec --------------------------------------------------------------------------------------------------

  /**
   * Starts a command in a container of a running pod. Resolves once the session is started locally; every failure
   * after that, a refused upgrade included, arrives through `ended` (ExecEnd `failed`, with ForbiddenError,
   * UnauthorizedError, UnavailableError `exec-not-ready` when nothing ran, CutStreamError when the stream ended
   * without the command's exit status). The exit status is read from the pod, never guessed: a command that exits 3
   * ends `exit` with code 3. stdout and stderr flow with backpressure; stdin is half-closed as ExecStdin says.
   * Rejects only when the transport cannot start at all (InfraError `kubectl-missing`).
   */
  exec(request: ExecRequest): Promise<ExecSession>;

  // --- The server -------------------------------------------------------------------------------------------

  /** The API server's version (/version, readable by every user). */
  getServerVersion(options?: CallOptions): Promise<ServerVersion>;
}

/** What a run's warm claim and `warm`'s top up need of placeholders (their Jobs): a RunCluster is one. */
export type PlaceholderCluster = Pick<RunCluster, "createJob" | "getJob" | "listJobs" | "deleteJob">;

/** What `warm` needs: placeholders, and all of them deleted by label (--release). */
export interface WarmCluster extends PlaceholderCluster {
  /** Deletes every Job matching a label selector and, in the background, their pods; resolves with the names deleted (none is fine). */
  deleteJobs(namespace: Namespace, labelSelector: string, options?: CallOptions): Promise<string[]>;
}

/**
 * What the operator commands need (list, cancel, gc): read our Jobs, pods and budgets, request a cancel (an
 * annotation), and delete what gc judged over.
 */
export interface OpsCluster
  extends
    Pick<
      RunCluster,
      "getJob" | "listJobs" | "listPods" | "patchJobAnnotations" | "deleteJob" | "deleteDisruptionBudget"
    >,
    Pick<LeaseCluster, "listLeases"> {
  /** Lists the PodDisruptionBudgets matching a label selector; none is an empty list. Throws ForbiddenError, UnauthorizedError. */
  listDisruptionBudgets(
    namespace: Namespace,
    labelSelector: string,
    options?: CallOptions,
  ): Promise<IPodDisruptionBudget[]>;
}

/**
 * What doctor needs: the transport and the server, the kubeconfig, the reviews of what the identity may do, a Job
 * created with dryRun, and the cluster-scoped reads it reports on.
 */
export interface DoctorCluster extends Pick<RunCluster, "createJob" | "getServerVersion"> {
  /** The transport and, for kubectl, its client version. Rejects when the transport cannot run (InfraError `kubectl-missing`). */
  describeTransport(options?: CallOptions): Promise<TransportFacts>;

  /**
   * The kubeconfig as the transport resolves it for the chosen context, as kubectl's `config view --minify` shape
   * (one cluster, one context, one user; `flatten`: certificate files inlined as *-data). Holds the credentials:
   * parsed, never printed or logged. Local: no request. Throws ConfigError.
   */
  readKubeconfig(options?: CallOptions & { readonly flatten?: boolean }): Promise<unknown>;

  /**
   * Creates review objects (SelfSubjectAccessReview, SelfSubjectReview: allowed to every authenticated user) and
   * resolves with the server's answers, one object each, in no promised order (match them by their spec).
   */
  createReviews(reviews: readonly object[], options?: CallOptions): Promise<unknown[]>;

  /** Reads a namespace (cluster-scoped: a scoped credential may not; ForbiddenError). Throws NotFoundError. */
  getNamespace(name: string, options?: CallOptions): Promise<unknown>;

  /** Lists the nodes (cluster-scoped: ForbiddenError for a scoped credential). */
  listNodes(options?: CallOptions): Promise<unknown[]>;

  /** Reads a PersistentVolumeClaim. Throws NotFoundError, ForbiddenError. */
  getPersistentVolumeClaim(namespace: Namespace, name: string, options?: CallOptions): Promise<unknown>;
}

/** What `credentials` needs (the admin's calls): the admin kubeconfig, the scoped identity's objects and its token. */
export interface CredentialsCluster extends Pick<DoctorCluster, "readKubeconfig"> {
  /**
   * Creates, corrects or leaves the credential's ServiceAccount, Role and RoleBinding, in that order, and says which it
   * did to each, by reference (`serviceaccount/NAME`, `role.rbac.authorization.k8s.io/NAME`,
   * `rolebinding.rbac.authorization.k8s.io/NAME`). An apply that failed partway resolves with what it did before and
   * the typed error (`failure`: ForbiddenError, UnauthorizedError, InvalidError, ...); ConfigError and the like reject.
   */
  applyCredentialObjects(
    namespace: Namespace,
    objects: CredentialObjectSet,
    options?: CallOptions,
  ): Promise<AppliedObjects>;

  /**
   * Posts a TokenRequest (`body`) for a ServiceAccount and resolves with the answer, whose status holds the token:
   * never logged, and never quoted in an error.
   */
  requestToken(namespace: string, serviceAccount: string, body: object, options?: CallOptions): Promise<unknown>;

  /**
   * Deletes the credential's RoleBinding, Role and ServiceAccount of that name (its tokens die with it); already gone
   * is fine. Resolves with the references deleted now (same form as applyCredentialObjects').
   */
  deleteCredentialObjects(namespace: Namespace, name: string, options?: CallOptions): Promise<Set<string>>;
}

/**
 * A Kubernetes cluster as the runner uses it: every consumer's interface at once, which each transport implements.
 * Construct it at the CLI edge (or in the library's caller); no method runs at construction. Methods may be called
 * concurrently. A consumer takes the narrowest of the interfaces above that it needs.
 */
export interface Cluster extends RunCluster, WarmCluster, OpsCluster, DoctorCluster, CredentialsCluster, LeaseCluster {
  /** Which transport this is. */
  readonly transport: TransportFacts["name"];
}

// --- Several instances (serve --instance, --adopt): kept apart so its users can be given just these ------------

/**
 * What an instance's Lease holder and its adopter ask of the cluster: kept apart from Cluster's other calls (which
 * Cluster extends) so that its users can be given just this. Every method may throw the common errors of Cluster.
 */
export interface LeaseCluster {
  /** Reads one Lease. Throws NotFoundError when there is none, ForbiddenError, UnauthorizedError. */
  getLease(namespace: Namespace, name: string, options?: CallOptions): Promise<ILease>;

  /** Lists the Leases matching a label selector; none is an empty list. Throws ForbiddenError, UnauthorizedError. */
  listLeases(namespace: Namespace, labelSelector: string, options?: CallOptions): Promise<ILease[]>;

  /** Creates a Lease and resolves with it as stored. Throws AlreadyExistsError, ForbiddenError, InvalidError. */
  createLease(namespace: Namespace, lease: ILease, options?: CallOptions): Promise<ILease>;

  /**
   * Replaces a Lease with `lease`, which carries the metadata.resourceVersion it was read at: ConflictError when it
   * changed since (someone else renewed or took it), NotFoundError when it is gone. Resolves with it as stored.
   */
  updateLease(namespace: Namespace, lease: ILease, options?: CallOptions): Promise<ILease>;

  /**
   * Deletes one Lease: "deleted", or "absent" when there was none (not an error). With `resourceVersion`, only the
   * Lease still at that version goes (an adopter's clean-up of an expired one): ConflictError when it was renewed.
   */
  deleteLease(
    namespace: Namespace,
    name: string,
    options?: CallOptions & { readonly resourceVersion?: string },
  ): Promise<"deleted" | "absent">;

  /**
   * Sets annotations on a Job only if it is still at `resourceVersion` (one JSON merge patch carrying
   * metadata.resourceVersion: the API server answers 409 when the Job changed since it was read), and resolves with
   * the Job as patched. Of two adopters that read the same Job, one wins; the other gets ConflictError.
   * Throws NotFoundError when the Job is gone, ForbiddenError, UnauthorizedError.
   */
  claimJob(
    namespace: Namespace,
    name: string,
    resourceVersion: string,
    annotations: Readonly<Record<string, string>>,
    options?: CallOptions,
  ): Promise<IJob>;
}
