// Pure builders for every kubectl argument list the runner produces: the single source of the call plan.

/** Where kubectl points: resolved once at the CLI edge. */
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

/** The container name of the run pod; every exec names it explicitly. */
export const RUN_CONTAINER = "run";

/** A bound for calls that talk to the API server only (never for exec, which streams for as long as a step runs). */
export const API_REQUEST_TIMEOUT = "30s";

function buildGlobalArgs(target: ClusterTarget, pinNamespace = true): string[] {
  const args: string[] = [];
  if (target.kubeconfig) args.push("--kubeconfig", target.kubeconfig);
  if (target.context) args.push("--context", target.context);
  if (pinNamespace && target.namespace !== undefined) args.push("--namespace", target.namespace);
  return args;
}

/**
 * `create -f -`: the Job manifest (JSON) arrives on stdin; prints the created Job as JSON, whose namespace the
 * runner pins on later calls. Without --namespace when the namespace is the context's: kubectl picks it.
 */
export function buildCreateArgs(target: ClusterTarget): string[] {
  return [...buildGlobalArgs(target, !target.namespaceFromContext), "create", "--request-timeout", API_REQUEST_TIMEOUT, "-f", "-", "-o", "json"];
}

/** Reads one Job as JSON (used to confirm a Job after an ambiguous create). */
export function buildGetJobArgs(target: ClusterTarget, jobName: string): string[] {
  return [...buildGlobalArgs(target), "get", "job", jobName, "--request-timeout", API_REQUEST_TIMEOUT, "-o", "json"];
}

/** Lists the run's pods as JSON (a PodList), by the run-id label set on the pod template. */
export function buildGetPodsArgs(target: ClusterTarget, labelSelector: string): string[] {
  return [...buildGlobalArgs(target), "get", "pods", "--selector", labelSelector, "--request-timeout", API_REQUEST_TIMEOUT, "-o", "json"];
}

/** Lists the events of one object (an EventList as JSON), to explain why a pod is still Pending. */
export function buildGetEventsArgs(target: ClusterTarget, kind: "Pod" | "Job", name: string): string[] {
  return [
    ...buildGlobalArgs(target),
    "get",
    "events",
    "--field-selector",
    `involvedObject.kind=${kind},involvedObject.name=${name}`,
    "--request-timeout",
    API_REQUEST_TIMEOUT,
    "-o",
    "json",
  ];
}

/** `exec` into the run container; `stdin` adds -i so the command reads what the runner pipes in. */
export function buildExecArgs(target: ClusterTarget, pod: string, command: readonly string[], stdin: boolean): string[] {
  return [...buildGlobalArgs(target), "exec", ...(stdin ? ["-i"] : []), pod, "-c", RUN_CONTAINER, "--", ...command];
}

/** Deletes the Job and (background propagation) its pods; already-gone is not an error; does not block. */
export function buildDeleteJobArgs(target: ClusterTarget, jobName: string): string[] {
  return [...buildGlobalArgs(target), "delete", "job", jobName, "--cascade=background", "--ignore-not-found", "--wait=false", "--request-timeout", API_REQUEST_TIMEOUT];
}

/** Lists the runner's Jobs by label, for finding orphans. */
export function buildListJobsArgs(target: ClusterTarget, labelSelector: string): string[] {
  return [...buildGlobalArgs(target), "get", "jobs", "--selector", labelSelector, "--request-timeout", API_REQUEST_TIMEOUT, "-o", "json"];
}
