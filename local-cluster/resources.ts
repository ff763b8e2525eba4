// The resource types the local cluster serves: one table feeds discovery, OpenAPI, routing and storage.

export interface ResourceType {
  readonly group: string;
  readonly version: string;
  /** Plural lowercase name used in URLs (`jobs`). */
  readonly resource: string;
  readonly kind: string;
  readonly singular: string;
  readonly namespaced: boolean;
  readonly shortNames?: readonly string[];
  readonly categories?: readonly string[];
  readonly verbs: readonly string[];
  /** Subresources served for this resource (`exec`, `log`, `status`, `token`). */
  readonly subresources?: readonly string[];
}

const CRUD = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"] as const;
const CREATE_ONLY = ["create"] as const;

export const RESOURCE_TYPES: readonly ResourceType[] = [
  {
    group: "",
    version: "v1",
    resource: "pods",
    kind: "Pod",
    singular: "pod",
    namespaced: true,
    shortNames: ["po"],
    categories: ["all"],
    verbs: CRUD,
    subresources: ["eviction", "exec", "log", "status"],
  },
  {
    group: "",
    version: "v1",
    resource: "events",
    kind: "Event",
    singular: "event",
    namespaced: true,
    shortNames: ["ev"],
    verbs: CRUD,
  },
  {
    group: "",
    version: "v1",
    resource: "namespaces",
    kind: "Namespace",
    singular: "namespace",
    namespaced: false,
    shortNames: ["ns"],
    verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
  },
  {
    group: "",
    version: "v1",
    resource: "nodes",
    kind: "Node",
    singular: "node",
    namespaced: false,
    shortNames: ["no"],
    verbs: ["get", "list", "watch"],
  },
  {
    group: "",
    version: "v1",
    resource: "configmaps",
    kind: "ConfigMap",
    singular: "configmap",
    namespaced: true,
    shortNames: ["cm"],
    verbs: CRUD,
  },
  { group: "", version: "v1", resource: "secrets", kind: "Secret", singular: "secret", namespaced: true, verbs: CRUD },
  {
    group: "",
    version: "v1",
    resource: "persistentvolumeclaims",
    kind: "PersistentVolumeClaim",
    singular: "persistentvolumeclaim",
    namespaced: true,
    shortNames: ["pvc"],
    verbs: CRUD,
    subresources: ["status"],
  },
  {
    group: "",
    version: "v1",
    resource: "serviceaccounts",
    kind: "ServiceAccount",
    singular: "serviceaccount",
    namespaced: true,
    shortNames: ["sa"],
    verbs: CRUD,
    subresources: ["token"],
  },
  {
    group: "batch",
    version: "v1",
    resource: "jobs",
    kind: "Job",
    singular: "job",
    namespaced: true,
    categories: ["all"],
    verbs: CRUD,
    subresources: ["status"],
  },
  {
    group: "policy",
    version: "v1",
    resource: "poddisruptionbudgets",
    kind: "PodDisruptionBudget",
    singular: "poddisruptionbudget",
    namespaced: true,
    shortNames: ["pdb"],
    verbs: CRUD,
    subresources: ["status"],
  },
  {
    group: "coordination.k8s.io",
    version: "v1",
    resource: "leases",
    kind: "Lease",
    singular: "lease",
    namespaced: true,
    verbs: CRUD,
  },
  {
    group: "rbac.authorization.k8s.io",
    version: "v1",
    resource: "roles",
    kind: "Role",
    singular: "role",
    namespaced: true,
    verbs: CRUD,
  },
  {
    group: "rbac.authorization.k8s.io",
    version: "v1",
    resource: "rolebindings",
    kind: "RoleBinding",
    singular: "rolebinding",
    namespaced: true,
    verbs: CRUD,
  },
  {
    group: "rbac.authorization.k8s.io",
    version: "v1",
    resource: "clusterroles",
    kind: "ClusterRole",
    singular: "clusterrole",
    namespaced: false,
    verbs: CRUD,
  },
  {
    group: "rbac.authorization.k8s.io",
    version: "v1",
    resource: "clusterrolebindings",
    kind: "ClusterRoleBinding",
    singular: "clusterrolebinding",
    namespaced: false,
    verbs: CRUD,
  },
  {
    group: "authentication.k8s.io",
    version: "v1",
    resource: "selfsubjectreviews",
    kind: "SelfSubjectReview",
    singular: "selfsubjectreview",
    namespaced: false,
    verbs: CREATE_ONLY,
  },
  {
    group: "authentication.k8s.io",
    version: "v1",
    resource: "tokenreviews",
    kind: "TokenReview",
    singular: "tokenreview",
    namespaced: false,
    verbs: CREATE_ONLY,
  },
  {
    group: "authorization.k8s.io",
    version: "v1",
    resource: "selfsubjectaccessreviews",
    kind: "SelfSubjectAccessReview",
    singular: "selfsubjectaccessreview",
    namespaced: false,
    verbs: CREATE_ONLY,
  },
  {
    group: "authorization.k8s.io",
    version: "v1",
    resource: "selfsubjectrulesreviews",
    kind: "SelfSubjectRulesReview",
    singular: "selfsubjectrulesreview",
    namespaced: false,
    verbs: CREATE_ONLY,
  },
  {
    group: "authorization.k8s.io",
    version: "v1",
    resource: "subjectaccessreviews",
    kind: "SubjectAccessReview",
    singular: "subjectaccessreview",
    namespaced: false,
    verbs: CREATE_ONLY,
  },
];

/** `batch/v1` or `v1`. */
export function formatApiVersion(group: string, version: string): string {
  return group ? `${group}/${version}` : version;
}

export function findResourceType(group: string, version: string, resource: string): ResourceType | undefined {
  return RESOURCE_TYPES.find((t) => t.group === group && t.version === version && t.resource === resource);
}

/** Reviews are answered, never stored. */
export function isReviewResource(type: ResourceType): boolean {
  return type.group === "authentication.k8s.io" || type.group === "authorization.k8s.io";
}

export function listGroupVersions(): { group: string; version: string }[] {
  const seen = new Map<string, { group: string; version: string }>();
  for (const t of RESOURCE_TYPES)
    seen.set(formatApiVersion(t.group, t.version), { group: t.group, version: t.version });
  return [...seen.values()];
}

/** The store key of a resource type: `jobs.batch`, `pods`. */
export function storeKeyOf(type: ResourceType): string {
  return type.group ? `${type.resource}.${type.group}` : type.resource;
}
