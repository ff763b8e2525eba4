// The API requests the API transport makes for each planned call, as pure descriptions printed by --dry-run beside the kubectl command.
import {
  buildDisruptionBudgetsPath,
  buildEventsPath,
  buildExecPath,
  buildExecQuery,
  buildInvolvedKindSelector,
  buildJobsPath,
  buildLeasesPath,
  buildPodsPath,
  buildRbacPath,
  buildServiceAccountsPath,
  buildTokenRequestPath,
  CREATE_QUERY,
  withQuery,
} from "./api-paths.js";
import { RUN_CONTAINER } from "../../manifests/names.js";
import { MANAGED_SELECTOR } from "../../manifests/labels.js";

/** One request: method, path with its query as sent, and what the body is (its kind, never its content). */
export interface PlannedApiRequest {
  readonly method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  readonly path: string;
  readonly body?: string;
  /** How the request is sent when not as one JSON request: an exec's WebSocket, a watch's stream. */
  readonly via?: string;
  /** When it is sent, if not always: `when it is absent`. */
  readonly when?: string;
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
  return {
    method: "PATCH",
    path: buildJobsPath(namespace, name),
    body: `merge patch of metadata.annotations ${keys.join(", ")}`,
  };
}

/** The claim of a run: a merge patch of its annotations that carries the resourceVersion the Job must still be at. */
export function planClaimJob(
  namespace: string,
  name: string,
  resourceVersion: string,
  keys: readonly string[],
): PlannedApiRequest {
  return {
    method: "PATCH",
    path: buildJobsPath(namespace, name),
    body: `merge patch of metadata.annotations ${keys.join(", ")} at metadata.resourceVersion ${resourceVersion}`,
  };
}

export function planGetLease(namespace: string, name: string): PlannedApiRequest {
  return { method: "GET", path: buildLeasesPath(namespace, name) };
}

export function planListLeases(namespace: string, labelSelector: string): PlannedApiRequest {
  return { method: "GET", path: withQuery(buildLeasesPath(namespace), { labelSelector }) };
}

export function planCreateLease(namespace: string): PlannedApiRequest {
  return { method: "POST", path: withQuery(buildLeasesPath(namespace), CREATE_QUERY), body: "Lease" };
}

/** A renewal or release: the Lease as read, with the holder's fields, at the resourceVersion read (409 when it changed). */
export function planUpdateLease(namespace: string, name: string): PlannedApiRequest {
  return { method: "PUT", path: buildLeasesPath(namespace, name), body: "Lease (at the resourceVersion read)" };
}

export function planDeleteLease(namespace: string, name: string, resourceVersion?: string): PlannedApiRequest {
  return {
    method: "DELETE",
    path: buildLeasesPath(namespace, name),
    ...(resourceVersion === undefined
      ? {}
      : { body: `DeleteOptions (precondition resourceVersion ${resourceVersion})` }),
  };
}

/** A delete with background propagation; `preconditions` describes the claim's uid and resourceVersion. */
export function planDeleteJob(namespace: string, name: string, preconditions?: string): PlannedApiRequest {
  return {
    method: "DELETE",
    path: buildJobsPath(namespace, name),
    body: `DeleteOptions (background propagation${preconditions ? `, ${preconditions}` : ""})`,
  };
}

export function planCreateBudget(namespace: string): PlannedApiRequest {
  return {
    method: "POST",
    path: withQuery(buildDisruptionBudgetsPath(namespace), CREATE_QUERY),
    body: "PodDisruptionBudget (maxUnavailable 0, owned by the Job)",
  };
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

/**
 * Likewise the namespace's events about one kind of object, which every run's look at its pod's (or Job's) events is
 * served from (Cluster.watchEvents): selected by kind on the server, by name in the process.
 */
export function planWatchEvents(namespace: string, kind: "Pod" | "Job"): PlannedApiRequest[] {
  return planSharedWatch(buildEventsPath(namespace), { fieldSelector: buildInvolvedKindSelector(kind) });
}

function planSharedWatch(
  path: string,
  selector: Readonly<Record<string, string>> = { labelSelector: MANAGED_SELECTOR },
): PlannedApiRequest[] {
  return [
    { method: "GET", path: withQuery(path, selector), via: "shared by every run of the process" },
    {
      method: "GET",
      path: withQuery(path, {
        ...selector,
        watch: "true",
        allowWatchBookmarks: "true",
        resourceVersion: "<listed>",
        timeoutSeconds: WATCH_TIMEOUT_SECONDS,
      }),
      via: "a watch stream, shared",
    },
  ];
}

/** The credential's ServiceAccount, Role and RoleBinding, each read and then created when absent or replaced when it differs (ApiCluster.applyCredentialObjects). */
export function planApplyCredentialObjects(namespace: string, name: string): PlannedApiRequest[] {
  const objects: Array<[string, (name?: string) => string]> = [
    ["ServiceAccount", (n) => buildServiceAccountsPath(namespace, n)],
    ["Role", (n) => buildRbacPath(namespace, "roles", n)],
    ["RoleBinding", (n) => buildRbacPath(namespace, "rolebindings", n)],
  ];
  return objects.flatMap(([kind, path]): PlannedApiRequest[] => [
    { method: "GET", path: path(name) },
    { method: "POST", path: path(), body: kind, when: "when it is absent" },
    {
      method: "PUT",
      path: path(name),
      body: `${kind} (the one read, with the runner's fields)`,
      when: "when it differs",
    },
  ]);
}

/** The TokenRequest: the token comes back in the answer's body, never in a request line. */
export function planRequestToken(namespace: string, serviceAccount: string): PlannedApiRequest {
  return { method: "POST", path: buildTokenRequestPath(namespace, serviceAccount), body: "TokenRequest" };
}

/** The revoke: the RoleBinding, the Role, then the ServiceAccount (its tokens die with it); absent is fine. */
export function planDeleteCredentialObjects(namespace: string, name: string): PlannedApiRequest[] {
  return [
    buildRbacPath(namespace, "rolebindings", name),
    buildRbacPath(namespace, "roles", name),
    buildServiceAccountsPath(namespace, name),
  ].map((path) => ({ method: "DELETE", path }));
}

/** The exec as its WebSocket upgrade request; whatever goes to stdin travels in the socket, never in the path. */
export function planExec(
  namespace: string,
  pod: string,
  command: readonly string[],
  stdin: boolean,
  container: string = RUN_CONTAINER,
): PlannedApiRequest {
  return {
    method: "GET",
    path: withQuery(buildExecPath(namespace, pod), buildExecQuery(command, container, stdin)),
    via: "WebSocket v5.channel.k8s.io",
  };
}

/** The plan's stand-ins for what only the run knows (the pod, the context's namespace, a slot, a listed version), shown unescaped. */
const PLACEHOLDERS = /%3C(pod|namespace|slot|listed)%3E/g;

/** `GET /path?query (body: Job; WebSocket v5.channel.k8s.io)`: the path and query as sent, but the plan's stand-ins readable. */
export function formatApiRequest(request: PlannedApiRequest): string {
  const extras = [request.body ? `body: ${request.body}` : undefined, request.via, request.when].filter(Boolean);
  return `${request.method} ${request.path.replace(PLACEHOLDERS, "<$1>")}${extras.length > 0 ? ` (${extras.join("; ")})` : ""}`;
}
