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

/** What a Job of ours is for; only placeholders carry it (a run's Job has the run-id label instead). */
export const ROLE_LABEL = "knotless.dev/role";
/** The role of a placeholder: a Job that holds a node warm until a run claims it or its deadline passes. */
export const WARM_ROLE = "warm";

/** The label selector that finds our placeholders (in one namespace). */
export function buildPlaceholderSelector(): string {
  return `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE},${ROLE_LABEL}=${WARM_ROLE}`;
}
