// Pure builders for every kubectl argument list the runner produces, each with the API permissions it needs: the single source of the call plan and of the credential's Role.

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

/** One rule of what a kubectl call asks of the API server, in the shape of an RBAC PolicyRule (namespaced). */
export interface ApiPermission {
  /** "" for the core group. */
  readonly apiGroup: string;
  /** A resource or subresource: `jobs`, `pods/exec`. */
  readonly resource: string;
  readonly verbs: readonly string[];
}

/** A builder of one kind of kubectl call, carrying the permissions that call needs. */
export type KubectlCall<A extends unknown[]> = ((...args: A) => string[]) & { readonly permissions: readonly ApiPermission[] };

/**
 * The one way to declare a kubectl call: its builder and the permissions it needs go together, so the scoped
 * credential's Role (src/credentials/) grants what the runner calls and nothing else, and a new call cannot be
 * added without its permission (a test checks every `build*Args` export is declared here).
 */
function defineCall<A extends unknown[]>(permissions: readonly ApiPermission[], build: (...args: A) => string[]): KubectlCall<A> {
  return Object.assign(build, { permissions });
}

const jobs = (...verbs: string[]): ApiPermission => ({ apiGroup: "batch", resource: "jobs", verbs });
const pods = (...verbs: string[]): ApiPermission => ({ apiGroup: "", resource: "pods", verbs });
const events = (...verbs: string[]): ApiPermission => ({ apiGroup: "", resource: "events", verbs });
/** The exec WebSocket (and SPDY) upgrade is authorized as get; newer API servers also check create. */
const podsExec: ApiPermission = { apiGroup: "", resource: "pods/exec", verbs: ["get", "create"] };

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
export const buildCreateArgs = defineCall([jobs("create")], (target: ClusterTarget): string[] => {
  return [...buildGlobalArgs(target, !target.namespaceFromContext), "create", "--request-timeout", API_REQUEST_TIMEOUT, "-f", "-", "-o", "json"];
});

/** Reads one Job as JSON (used to confirm a Job after an ambiguous create). */
export const buildGetJobArgs = defineCall([jobs("get")], (target: ClusterTarget, jobName: string): string[] => {
  return [...buildGlobalArgs(target), "get", "job", jobName, "--request-timeout", API_REQUEST_TIMEOUT, "-o", "json"];
});

/** Lists the run's pods as JSON (a PodList), by the run-id label set on the pod template. */
export const buildGetPodsArgs = defineCall([pods("list")], (target: ClusterTarget, labelSelector: string): string[] => {
  return [...buildGlobalArgs(target), "get", "pods", "--selector", labelSelector, "--request-timeout", API_REQUEST_TIMEOUT, "-o", "json"];
});

/** Lists the events of one object (an EventList as JSON), to explain why a pod is still Pending. */
export const buildGetEventsArgs = defineCall([events("list")], (target: ClusterTarget, kind: "Pod" | "Job", name: string): string[] => {
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
});

/** `exec` into the run container; `stdin` adds -i so the command reads what the runner pipes in. */
export const buildExecArgs = defineCall([pods("get"), podsExec], (target: ClusterTarget, pod: string, command: readonly string[], stdin: boolean): string[] => {
  return [...buildGlobalArgs(target), "exec", ...(stdin ? ["-i"] : []), pod, "-c", RUN_CONTAINER, "--", ...command];
});

/** Deletes the Job and (background propagation) its pods; already-gone is not an error; does not block. */
export const buildDeleteJobArgs = defineCall([jobs("delete")], (target: ClusterTarget, jobName: string): string[] => {
  return [...buildGlobalArgs(target), "delete", "job", jobName, "--cascade=background", "--ignore-not-found", "--wait=false", "--request-timeout", API_REQUEST_TIMEOUT];
});

/** Lists the runner's Jobs by label as JSON (a JobList): orphans, and the warm placeholders a run may claim. */
export const buildListJobsArgs = defineCall([jobs("list")], (target: ClusterTarget, labelSelector: string): string[] => {
  return [...buildGlobalArgs(target), "get", "jobs", "--selector", labelSelector, "--request-timeout", API_REQUEST_TIMEOUT, "-o", "json"];
});

/**
 * Deletes one placeholder only if it is still the object the caller listed: `delete --raw` sends the DeleteOptions
 * on stdin (`buildClaimBody`: background propagation, preconditions on uid and resourceVersion). The delete is the
 * claim: of two runs that saw the same placeholder, one succeeds, the other gets NotFound or Conflict.
 */
export const buildClaimPlaceholderArgs = defineCall([jobs("delete")], (target: ClusterTarget, namespace: string, name: string): string[] => {
  return [...buildGlobalArgs(target), "delete", "--raw", `/apis/batch/v1/namespaces/${namespace}/jobs/${name}`, "-f", "-", "--request-timeout", API_REQUEST_TIMEOUT];
});

/** The DeleteOptions of a claim (JSON, for `buildClaimPlaceholderArgs`' stdin): only this uid at this resourceVersion goes. */
export function buildClaimBody(uid: string, resourceVersion: string): string {
  return JSON.stringify({ kind: "DeleteOptions", apiVersion: "v1", propagationPolicy: "Background", preconditions: { uid, resourceVersion } });
}

/** Deletes every Job matching the selector (the placeholders, for `warm --release`) and their pods; none is fine. */
export const buildDeleteJobsBySelectorArgs = defineCall([jobs("delete")], (target: ClusterTarget, labelSelector: string): string[] => {
  return [...buildGlobalArgs(target), "delete", "jobs", "--selector", labelSelector, "--cascade=background", "--ignore-not-found", "--wait=false", "--request-timeout", API_REQUEST_TIMEOUT];
});

/** Every kubectl call the runner makes, by builder; the scoped credential's Role is the union of their permissions. */
export const KUBECTL_CALLS: ReadonlyArray<{ readonly permissions: readonly ApiPermission[] }> = [
  buildCreateArgs,
  buildGetJobArgs,
  buildGetPodsArgs,
  buildGetEventsArgs,
  buildExecArgs,
  buildDeleteJobArgs,
  buildListJobsArgs,
  buildClaimPlaceholderArgs,
  buildDeleteJobsBySelectorArgs,
];

/** The union of every call's permissions, one rule per resource with its verbs in a stable order. */
export function collectCallPermissions(calls = KUBECTL_CALLS): ApiPermission[] {
  const byResource = new Map<string, { apiGroup: string; resource: string; verbs: Set<string> }>();
  for (const call of calls) {
    for (const permission of call.permissions) {
      const key = `${permission.apiGroup}/${permission.resource}`;
      const rule = byResource.get(key) ?? { apiGroup: permission.apiGroup, resource: permission.resource, verbs: new Set<string>() };
      for (const verb of permission.verbs) rule.verbs.add(verb);
      byResource.set(key, rule);
    }
  }
  return [...byResource.values()]
    .sort((a, b) => `${a.apiGroup}/${a.resource}`.localeCompare(`${b.apiGroup}/${b.resource}`))
    .map((rule) => ({ apiGroup: rule.apiGroup, resource: rule.resource, verbs: [...rule.verbs].sort() }));
}
