// The labels and annotations that mark the runner's objects in the cluster.

export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
export const MANAGED_BY_VALUE = "knotless-runner-k8s";
export const RUN_ID_LABEL = "knotless.dev/run-id";
export const RUN_ID_ANNOTATION = "knotless.dev/run-id";
/** A random token per create attempt: tells our own Job apart from a stranger's after an ambiguous create. */
export const CREATE_TOKEN_ANNOTATION = "knotless.dev/create-token";

/** The label selector that finds the pods (and Jobs) of one run. */
export function buildRunSelector(runIdLabel: string): string {
  return `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE},${RUN_ID_LABEL}=${runIdLabel}`;
}

/** ISO time the run's runner last showed it was alive; refreshed every heartbeat interval (absent: creationTimestamp). */
export const HEARTBEAT_ANNOTATION = "knotless.dev/heartbeat";
/** Who runs the run: `<pid>@<host>` of the runner process, set at create. */
export const OWNER_ANNOTATION = "knotless.dev/owner";
/** ISO time another process asked the run to stop (`knotless-runner-k8s cancel`); the runner watches for it. */
export const CANCEL_REQUESTED_ANNOTATION = "knotless.dev/cancel-requested";
/** Who asked: `<pid>@<host>` of the cancelling process. */
export const CANCEL_REQUESTED_BY_ANNOTATION = "knotless.dev/cancel-requested-by";
/** ISO time the runner ended and left the Job on purpose (--keep): gc spares it until it finishes. */
export const KEPT_ANNOTATION = "knotless.dev/kept";
/** The run pod's idle timeout in seconds (`--pod-idle-timeout`), on the pod: how `list`, `gc` and the run word its stop. */
export const POD_IDLE_TIMEOUT_ANNOTATION = "knotless.dev/pod-idle-timeout-seconds";
/** The `serve` instance that owns the run (`--instance`), set at create and changed only by an adopter's claim. */
export const INSTANCE_ANNOTATION = "knotless.dev/instance";
/** The instance a run was adopted from, set by the adopter's claim (`list` shows it). */
export const ADOPTED_FROM_ANNOTATION = "knotless.dev/adopted-from";
/** What an adopter needs to continue the run (its plan, never a secret), gzip and base64 (src/serve/run-ownership.ts). */
export const CONTINUATION_ANNOTATION = "knotless.dev/continuation";
/** On an instance's Lease: the instance it is the Lease of. */
export const INSTANCE_LABEL = "knotless.dev/instance";
/** What a Job of ours is for: absent for runs, `warm` for a placeholder that holds a node (src/ops/classify-job.ts). */
export const ROLE_LABEL = "knotless.dev/role";
export const WARM_ROLE = "warm";

/** The label selector that finds every Job (and pod) of ours in a namespace: runs and warm placeholders. */
export const MANAGED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;

/** The label selector that finds our warm placeholders (in one namespace). */
export function buildPlaceholderSelector(): string {
  return `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE},${ROLE_LABEL}=${WARM_ROLE}`;
}
