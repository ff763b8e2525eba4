// The API transport's request paths and queries as pure functions: the ApiCluster sends them and the dry run prints them.

const enc = encodeURIComponent;

/** The namespace's Jobs, or one of them by name. */
export function buildJobsPath(namespace: string, name?: string): string {
  return `/apis/batch/v1/namespaces/${enc(namespace)}/jobs${name === undefined ? "" : `/${enc(name)}`}`;
}

/** The namespace's PodDisruptionBudgets, or one of them by name. */
export function buildDisruptionBudgetsPath(namespace: string, name?: string): string {
  return `/apis/policy/v1/namespaces/${enc(namespace)}/poddisruptionbudgets${name === undefined ? "" : `/${enc(name)}`}`;
}

/** The namespace's Leases (coordination.k8s.io/v1), or one of them by name. */
export function buildLeasesPath(namespace: string, name?: string): string {
  return `/apis/coordination.k8s.io/v1/namespaces/${enc(namespace)}/leases${name === undefined ? "" : `/${enc(name)}`}`;
}

export function buildPodsPath(namespace: string): string {
  return `/api/v1/namespaces/${enc(namespace)}/pods`;
}

export function buildEventsPath(namespace: string): string {
  return `/api/v1/namespaces/${enc(namespace)}/events`;
}

/** The namespace's ServiceAccounts, or one of them by name. */
export function buildServiceAccountsPath(namespace: string, name?: string): string {
  return `/api/v1/namespaces/${enc(namespace)}/serviceaccounts${name === undefined ? "" : `/${enc(name)}`}`;
}

/** A ServiceAccount's token subresource (a TokenRequest is posted to it). */
export function buildTokenRequestPath(namespace: string, serviceAccount: string): string {
  return `${buildServiceAccountsPath(namespace, serviceAccount)}/token`;
}

/** The namespace's Roles or RoleBindings (rbac.authorization.k8s.io/v1), or one of them by name. */
export function buildRbacPath(namespace: string, resource: "roles" | "rolebindings", name?: string): string {
  return `/apis/rbac.authorization.k8s.io/v1/namespaces/${enc(namespace)}/${resource}${name === undefined ? "" : `/${enc(name)}`}`;
}

/** The field selector of the events about one kind of object: the shared events watch's (kind only, names filtered in the process). */
export function buildInvolvedKindSelector(kind: "Pod" | "Job"): string {
  return `involvedObject.kind=${kind}`;
}

/** The field selector of one object's events. */
export function buildInvolvedSelector(kind: "Pod" | "Job", name: string): string {
  return `involvedObject.kind=${kind},involvedObject.name=${name}`;
}

/** A create validates every field server-side, as kubectl's own create does. */
export const CREATE_QUERY: Readonly<Record<string, string>> = { fieldValidation: "Strict" };

/** The exec subresource of one pod (a WebSocket upgrade, `v5.channel.k8s.io`). */
export function buildExecPath(namespace: string, pod: string): string {
  return `/api/v1/namespaces/${enc(namespace)}/pods/${enc(pod)}/exec`;
}

/** The exec's query: each argv part as one `command`, the container, stdin only when the caller writes to it. */
export function buildExecQuery(command: readonly string[], container: string, stdin: boolean): URLSearchParams {
  const query = new URLSearchParams();
  for (const part of command) query.append("command", part);
  query.set("container", container);
  if (stdin) query.set("stdin", "true");
  query.set("stdout", "true");
  query.set("stderr", "true");
  return query;
}

/** A path with its query as the client sends it (absent values left out, in the given order). */
export function withQuery(path: string, query: Readonly<Record<string, string | undefined>> | URLSearchParams): string {
  const params =
    query instanceof URLSearchParams
      ? query
      : new URLSearchParams(Object.entries(query).filter((entry): entry is [string, string] => entry[1] !== undefined));
  const text = params.toString();
  return text === "" ? path : `${path}?${text}`;
}
