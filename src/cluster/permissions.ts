// Every call the runner (and the admin's `credentials`) makes of a cluster, by name, with what it asks of RBAC: the one
// list the scoped credential's Role, doctor's checks and messages about a refusal are derived from. Each transport's
// builders declare themselves against these calls (kubectl/kubectl-args.ts); a transport speaking the API directly makes
// the same requests and needs the same rules.

/** One rule of what a call asks of the API server, in the shape of an RBAC PolicyRule (namespaced). */
export interface ApiPermission {
  /** "" for the core group. */
  readonly apiGroup: string;
  /** A resource or subresource: `jobs`, `pods/exec`. */
  readonly resource: string;
  readonly verbs: readonly string[];
}

/**
 * Whose call it is: the runner's (its permissions make the scoped credential's Role) or the admin's (the
 * `credentials` command, run once with an admin kubeconfig: never granted to the runner).
 */
export type CallScope = "runner" | "admin";

/** One call: what it needs, whose it is, and whether it is a diagnostic that copes with being forbidden. */
export interface CallDeclaration {
  readonly permissions: readonly ApiPermission[];
  readonly scope: CallScope;
  /**
   * A diagnostic that copes with being forbidden (doctor's reads of nodes and namespaces, which are cluster-scoped
   * and cannot be granted by a namespaced Role): its permissions are not part of the credential's Role.
   */
  readonly optional: boolean;
  /** Why a call with no permissions needs none (it reads only the kubeconfig, or what every user may read). */
  readonly needsNoPermission?: string;
}

/** What a call needs: RBAC rules, or (for calls that need none) the reason why not. */
type CallNeeds = readonly ApiPermission[] | { readonly none: string };

function runnerCall(needs: CallNeeds, options: { optional?: boolean } = {}): CallDeclaration {
  const optional = options.optional ?? false;
  if ("none" in needs) return { permissions: [], scope: "runner", optional, needsNoPermission: needs.none };
  return { permissions: needs, scope: "runner", optional };
}

/** A call only the admin makes (`credentials`): skipped by collectCallPermissions, so it can never widen the runner's Role. */
function adminCall(permissions: readonly ApiPermission[]): CallDeclaration {
  return { permissions, scope: "admin", optional: false };
}

const jobs = (...verbs: string[]): ApiPermission => ({ apiGroup: "batch", resource: "jobs", verbs });
const pods = (...verbs: string[]): ApiPermission => ({ apiGroup: "", resource: "pods", verbs });
const events = (...verbs: string[]): ApiPermission => ({ apiGroup: "", resource: "events", verbs });
/** The exec WebSocket (and SPDY) upgrade is authorized as get; newer API servers also check create. */
const podsExec: ApiPermission = { apiGroup: "", resource: "pods/exec", verbs: ["get", "create"] };
const budgets = (...verbs: string[]): ApiPermission => ({
  apiGroup: "policy",
  resource: "poddisruptionbudgets",
  verbs,
});
const leases = (...verbs: string[]): ApiPermission => ({ apiGroup: "coordination.k8s.io", resource: "leases", verbs });
const podsLog: ApiPermission = { apiGroup: "", resource: "pods/log", verbs: ["get"] };
const serviceAccounts = (...verbs: string[]): ApiPermission => ({ apiGroup: "", resource: "serviceaccounts", verbs });
const rbac = (resource: "roles" | "rolebindings", ...verbs: string[]): ApiPermission => ({
  apiGroup: "rbac.authorization.k8s.io",
  resource,
  verbs,
});

/**
 * Every call, by name. The API transport lists pods and events where kubectl polls them and watches them where
 * kubectl lists them: the Role grants both.
 */
export const CLUSTER_CALLS = {
  createJob: runnerCall([jobs("create")]),
  getJob: runnerCall([jobs("get")]),
  listPods: runnerCall([pods("list", "watch")]),
  listEvents: runnerCall([events("list", "watch")]),
  readLogs: runnerCall([podsLog]),
  exec: runnerCall([pods("get"), podsExec]),
  deleteJob: runnerCall([jobs("delete")]),
  createBudget: runnerCall([budgets("create")]),
  listBudgets: runnerCall([budgets("list")]),
  deleteBudget: runnerCall([budgets("delete")]),
  listJobs: runnerCall([jobs("list")]),
  claimPlaceholder: runnerCall([jobs("delete")]),
  deleteJobsBySelector: runnerCall([jobs("delete")]),
  annotateJob: runnerCall([jobs("patch")]),
  watchJob: runnerCall([jobs("get", "watch")]),
  getLease: runnerCall([leases("get")]),
  listLeases: runnerCall([leases("list")]),
  createLease: runnerCall([leases("create")]),
  updateLease: runnerCall([leases("update")]),
  deleteLease: runnerCall([leases("delete")]),
  claimJob: runnerCall([jobs("patch")]),
  clientVersion: runnerCall({ none: "talks to no server" }),
  serverVersion: runnerCall({ none: "/version is readable by every user (system:public-info-viewer)" }),
  viewConfig: runnerCall({ none: "reads the kubeconfig only" }),
  createReviews: runnerCall({ none: "self reviews are allowed to every authenticated user (system:basic-user)" }),
  getNamespace: runnerCall([{ apiGroup: "", resource: "namespaces", verbs: ["get"] }], { optional: true }),
  dryRunCreate: runnerCall([jobs("create")]),
  getNodes: runnerCall([{ apiGroup: "", resource: "nodes", verbs: ["list"] }], { optional: true }),
  getClaim: runnerCall([{ apiGroup: "", resource: "persistentvolumeclaims", verbs: ["get"] }], { optional: true }),
  viewAdminConfig: adminCall([]),
  applyCredential: adminCall([
    serviceAccounts("get", "create", "patch"),
    rbac("roles", "get", "create", "patch"),
    rbac("rolebindings", "get", "create", "patch"),
  ]),
  requestToken: adminCall([{ apiGroup: "", resource: "serviceaccounts/token", verbs: ["create"] }]),
  deleteCredential: adminCall([rbac("rolebindings", "delete"), rbac("roles", "delete"), serviceAccounts("delete")]),
} as const satisfies Readonly<Record<string, CallDeclaration>>;

/** What watching the run's Job needs (the cancel watch). */
export const WATCH_JOB_PERMISSIONS = CLUSTER_CALLS.watchJob.permissions;

/** What setting annotations on the run's Job needs (the heartbeat). */
export const PATCH_JOB_PERMISSIONS = CLUSTER_CALLS.annotateJob.permissions;

/** `get and watch on jobs.batch; get on pods`: what a call needs, in words, for messages about a refused one. */
export function formatPermissions(permissions: readonly ApiPermission[]): string {
  return permissions
    .map((p) => {
      const verbs =
        p.verbs.length > 1 ? `${p.verbs.slice(0, -1).join(", ")} and ${p.verbs.at(-1)}` : (p.verbs[0] ?? "");
      const [resource, sub] = p.resource.split("/");
      return `${verbs} on ${resource}${p.apiGroup ? `.${p.apiGroup}` : ""}${sub ? `/${sub}` : ""}`;
    })
    .join("; ");
}

/**
 * The union of the permissions of the runner's calls that are not optional, one rule per resource with its verbs in
 * a stable order: what the runner needs (the credential's Role, doctor's checks). Admin calls are skipped.
 */
export function collectCallPermissions(
  calls: readonly CallDeclaration[] = Object.values(CLUSTER_CALLS),
): ApiPermission[] {
  const byResource = new Map<string, { apiGroup: string; resource: string; verbs: Set<string> }>();
  for (const call of calls) {
    if (call.scope === "admin" || call.optional) continue;
    for (const permission of call.permissions) {
      const key = `${permission.apiGroup}/${permission.resource}`;
      const rule = byResource.get(key) ?? {
        apiGroup: permission.apiGroup,
        resource: permission.resource,
        verbs: new Set<string>(),
      };
      for (const verb of permission.verbs) rule.verbs.add(verb);
      byResource.set(key, rule);
    }
  }
  return [...byResource.values()]
    .sort((a, b) => `${a.apiGroup}/${a.resource}`.localeCompare(`${b.apiGroup}/${b.resource}`))
    .map((rule) => ({ apiGroup: rule.apiGroup, resource: rule.resource, verbs: [...rule.verbs].sort() }));
}
