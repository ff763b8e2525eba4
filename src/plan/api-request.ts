// The API requests the API transport makes for each planned call, as pure descriptions printed by --dry-run beside the kubectl command.
import { buildDisruptionBudgetsPath, buildEventsPath, buildExecPath, buildExecQuery, buildInvolvedSelector, buildJobsPath, buildPodsPath, CREATE_QUERY, withQuery } from "../cluster/api/api-paths.js";
import { RUN_CONTAINER } from "../k8s/names.js";
import { MANAGED_SELECTOR } from "../k8s/labels.js";

/** One request: method, path with its query as sent, and what the body is (its kind, never its content). */
export interface PlannedApiRequest {
  readonly method: "GET" | "POST" | "PATCH" | "DELETE";
  readonly path: string;
  readonly body?: string;
  /** How the request is sent when not as one JSON request: an exec's WebSocket, a watch's stream. */
  readonly via?: string;
}

/** The list-watch's bound on one watch request (src/cluster/api/list-watch.ts), renewed from the last resourceVersion. */
const WATCH_TIMEOUT_SECONDS = "300";

export function planListJobs(namespace: string, labelSelector: string): PlannedApiRequest {
  return { method: "GET", path: withQuery(buildJobsPath(namespace), { labelSelector }) };
}

export function planCreateJob(namespace: string, kind: string): PlannedApiRequest {
  return { method: "POST", path: withQuery(buildJobsPath(namespace), CREATE_QUERY), body: kind };
}

export function planPatchAnnotations(namespace: string, name: string, keys: readonly string[]): PlannedApiRequest {
  return { method: "PATCH", path: buildJobsPath(namespace, name), body: `merge patch of metadata.annotations ${keys.join(", ")}` };
}

/** A delete with background propagation; `preconditions` describes the claim's uid and resourceVersion. */
export function planDeleteJob(namespace: string, name: string, preconditions?: string): PlannedApiRequest {
  return { method: "DELETE", path: buildJobsPath(namespace, name), body: `DeleteOptions (background propagation${preconditions ? `, ${preconditions}` : ""})` };
}

export function planCreateBudget(namespace: string): PlannedApiRequest {
  return { method: "POST", path: withQuery(buildDisruptionBudgetsPath(namespace), CREATE_QUERY), body: "PodDisruptionBudget (maxUnavailable 0, owned by the Job)" };
}

export function planDeleteBudget(namespace: string, name: string): PlannedApiRequest {
  return { method: "DELETE", path: buildDisruptionBudgetsPath(namespace, name) };
}

/**
 * The process's one watch of the namespace's Jobs of ours, which every run's watch of its own Job is served from:
 * a list, then a watch from the list's resourceVersion (renewed from the last one seen).
 */
export function planWatchJobs(namespace: string): PlannedApiRequest[] {
  return planSharedWatch(buildJobsPath(namespace));
}

/** Likewise the namespace's pods of ours, which every run's pod wait is served from (Cluster.watchPods). */
export function planWatchPods(namespace: string): PlannedApiRequest[] {
  return planSharedWatch(buildPodsPath(namespace));
}

function planSharedWatch(path: string): PlannedApiRequest[] {
  return [
    { method: "GET", path: withQuery(path, { labelSelector: MANAGED_SELECTOR }), via: "shared by every run of the process" },
    { method: "GET", path: withQuery(path, { labelSelector: MANAGED_SELECTOR, watch: "true", allowWatchBookmarks: "true", resourceVersion: "<listed>", timeoutSeconds: WATCH_TIMEOUT_SECONDS }), via: "a watch stream, shared" },
  ];
}

export function planListEvents(namespace: string, kind: "Pod" | "Job", name: string): PlannedApiRequest {
  return { method: "GET", path: withQuery(buildEventsPath(namespace), { fieldSelector: buildInvolvedSelector(kind, name) }) };
}

/** The exec as its WebSocket upgrade request; whatever goes to stdin travels in the socket, never in the path. */
export function planExec(namespace: string, pod: string, command: readonly string[], stdin: boolean, container: string = RUN_CONTAINER): PlannedApiRequest {
  return { method: "GET", path: withQuery(buildExecPath(namespace, pod), buildExecQuery(command, container, stdin)), via: "WebSocket v5.channel.k8s.io" };
}

/** The plan's stand-ins for what only the run knows (the pod, the context's namespace, a slot, a listed version), shown unescaped. */
const PLACEHOLDERS = /%3C(pod|namespace|slot|listed)%3E/g;

/** `GET /path?query (body: Job; WebSocket v5.channel.k8s.io)`: the path and query as sent, but the plan's stand-ins readable. */
export function formatApiRequest(request: PlannedApiRequest): string {
  const extras = [request.body ? `body: ${request.body}` : undefined, request.via].filter(Boolean);
  return `${request.method} ${request.path.replace(PLACEHOLDERS, "<$1>")}${extras.length > 0 ? ` (${extras.join("; ")})` : ""}`;
}
