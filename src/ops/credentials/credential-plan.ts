// Pure: the calls `credentials` makes (and --revoke), in no transport's words, with what goes to their stdin; the same plan runs and is printed by --dry-run.
import type { ClusterTarget } from "../../cluster/cluster.js";
import { collectCallPermissions, type ApiPermission } from "../../cluster/permissions.js";
import type { PlannedCall } from "../../cluster/planned-call.js";
import { buildCredentialObjects, type CredentialIdentity, type CredentialObjects } from "./credential-objects.js";

/** Everything one `credentials` run needs, resolved and validated at the CLI edge. */
export interface CredentialRequest {
  /** The admin kubeconfig and context, the namespace pinned to the identity's. */
  readonly target: ClusterTarget;
  readonly identity: CredentialIdentity;
  /** Lifetime asked of the TokenRequest API. */
  readonly tokenSeconds: number;
  /** Where the scoped kubeconfig goes (mode 0600). */
  readonly outFile: string;
  /** The Role's rules; the runner's calls (collectCallPermissions) unless a test narrows them. */
  readonly permissions?: readonly ApiPermission[];
}

/** The objects of a request: the Role grants the runner's calls' permissions, nothing else. */
export function buildRequestObjects(request: Pick<CredentialRequest, "identity" | "permissions">): CredentialObjects {
  return buildCredentialObjects(request.identity, request.permissions ?? collectCallPermissions());
}

/** The calls that issue the credential, in order. */
export function planIssueCalls(request: CredentialRequest): PlannedCall[] {
  const { identity, outFile } = request;
  return [
    {
      plan: { call: "viewAdminConfig" },
      note: "reads the admin kubeconfig's server and CA (local; the admin's credentials in its output are not used)",
    },
    {
      plan: { call: "applyCredential", namespace: identity.namespace, name: identity.name },
      stdin: "the ServiceAccount, Role and RoleBinding above (YAML)",
    },
    {
      plan: { call: "requestToken", namespace: identity.namespace, serviceAccount: identity.name },
      stdin: `the TokenRequest above (JSON); the token in its answer is kept in memory and written only to ${outFile}`,
    },
  ];
}

/** The call that revokes it: the binding, the role and the ServiceAccount, whose tokens die with it. */
export function planRevokeCalls(identity: CredentialIdentity): PlannedCall[] {
  return [{ plan: { call: "deleteCredential", namespace: identity.namespace, name: identity.name } }];
}
