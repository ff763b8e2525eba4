// Pure builders of the scoped credential's objects: a ServiceAccount, a Role of exactly the runner's permissions, their RoleBinding, a TokenRequest.
import type { ApiPermission } from "../../cluster/permissions.js";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from "../../manifests/labels.js";

/** Who the credential is: one ServiceAccount (and Role and RoleBinding of the same name) in one namespace. */
export interface CredentialIdentity {
  readonly namespace: string;
  readonly name: string;
}

/** The default name of the ServiceAccount, Role and RoleBinding. */
export const DEFAULT_CREDENTIAL_NAME = "knotless-runner";

const RBAC_API = "rbac.authorization.k8s.io";

/** The user the API server sees for the credential: `system:serviceaccount:NS:NAME`. */
export function formatServiceAccountUser(identity: CredentialIdentity): string {
  return `system:serviceaccount:${identity.namespace}:${identity.name}`;
}

/** One RBAC PolicyRule per permission, in the order given (collectCallPermissions sorts them). */
export interface PolicyRule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
}

export function buildRoleRules(permissions: readonly ApiPermission[]): PolicyRule[] {
  return permissions.map((p) => ({ apiGroups: [p.apiGroup], resources: [p.resource], verbs: [...p.verbs] }));
}

function buildMetadata(identity: CredentialIdentity): object {
  return { name: identity.name, namespace: identity.namespace, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } };
}

/** The three objects `credentials` applies, in the order they are applied (and the reverse of their deletion). */
export interface CredentialObjects {
  readonly serviceAccount: object;
  readonly role: object;
  readonly roleBinding: object;
}

/**
 * The ServiceAccount (no token is mounted into pods that would run as it: the runner's pods never do), the Role
 * with exactly `permissions` (namespaced: no cluster-scoped access) and the RoleBinding of one to the other.
 */
export function buildCredentialObjects(
  identity: CredentialIdentity,
  permissions: readonly ApiPermission[],
): CredentialObjects {
  return {
    serviceAccount: {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: buildMetadata(identity),
      automountServiceAccountToken: false,
    },
    role: {
      apiVersion: `${RBAC_API}/v1`,
      kind: "Role",
      metadata: buildMetadata(identity),
      rules: buildRoleRules(permissions),
    },
    roleBinding: {
      apiVersion: `${RBAC_API}/v1`,
      kind: "RoleBinding",
      metadata: buildMetadata(identity),
      roleRef: { apiGroup: RBAC_API, kind: "Role", name: identity.name },
      subjects: [{ kind: "ServiceAccount", name: identity.name, namespace: identity.namespace }],
    },
  };
}

/** The references kubectl prints for the objects (`serviceaccount/NAME`), in the order they are applied. */
export function listObjectRefs(identity: CredentialIdentity): readonly string[] {
  return [
    `serviceaccount/${identity.name}`,
    `role.${RBAC_API}/${identity.name}`,
    `rolebinding.${RBAC_API}/${identity.name}`,
  ];
}

/** The TokenRequest body: a token for the API server's own audience, valid `expirationSeconds`. */
export function buildTokenRequest(expirationSeconds: number): object {
  return { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds } };
}

/** The TokenRequest API refuses less than ten minutes (kube-apiserver validation). */
export const MIN_TOKEN_SECONDS = 600;
