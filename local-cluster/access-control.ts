// Authenticates API requests (a bearer token the cluster issued, or none: the admin) and authorizes them with RBAC, refusing as kube-apiserver does.

import { ApiError, formatQualifiedResource } from "./api-error.js";
import {
  authorize,
  formatServiceAccountUser,
  type Decision,
  type RbacObjects,
  type RequestAttributes,
  type UserInfo,
} from "./rbac.js";
import type { ObjectStore } from "./store.js";
import type { TokenAuthority } from "./tokens.js";

/** Whoever sends no credentials: the local cluster's kubeconfig has none, and stays all-powerful. */
export const ADMIN_USER: UserInfo = { username: "local-admin", groups: ["system:masters", "system:authenticated"] };

/** 401, in the shape kube-apiserver sends for a token it does not accept; kubectl prints `You must be logged in to the server (Unauthorized)`. */
export function unauthorized(): ApiError {
  return new ApiError(401, "Unauthorized", "Unauthorized");
}

/**
 * 403, in the shape kube-apiserver sends (responsewriters.Forbidden, apierrors.NewForbidden), so kubectl prints
 * `Error from server (Forbidden): jobs.batch is forbidden: User "…" cannot create resource "jobs" in API group "batch" in the namespace "ci"`.
 */
export function forbidden(user: UserInfo, attributes: RequestAttributes, reason = ""): ApiError {
  const said = reason ? `: ${reason}` : "";
  if (attributes.kind === "nonResource")
    return new ApiError(
      403,
      "Forbidden",
      `forbidden: User "${user.username}" cannot ${attributes.verb} path "${attributes.path}"${said}`,
      {},
    );
  const resource = attributes.subresource ? `${attributes.resource}/${attributes.subresource}` : attributes.resource;
  const scope = attributes.namespace ? `in the namespace "${attributes.namespace}"` : "at the cluster scope";
  const detail = `User "${user.username}" cannot ${attributes.verb} resource "${resource}" in API group "${attributes.apiGroup}" ${scope}${said}`;
  const qualified = formatQualifiedResource(attributes.resource, attributes.apiGroup);
  const message = attributes.name
    ? `${qualified} "${attributes.name}" is forbidden: ${detail}`
    : `${qualified} is forbidden: ${detail}`;
  return new ApiError(403, "Forbidden", message, {
    ...(attributes.name ? { name: attributes.name } : {}),
    ...(attributes.apiGroup ? { group: attributes.apiGroup } : {}),
    kind: attributes.resource,
  });
}

export class AccessControl {
  /**
   * `adminToken`: a bearer token that is the admin too. The https kubeconfig carries it, because kubectl asks for a
   * user name on the terminal when an https server's kubeconfig user has no credentials at all.
   */
  constructor(
    private readonly store: ObjectStore,
    readonly tokens: TokenAuthority,
    private readonly adminToken?: string,
  ) {}

  /**
   * Who sent the request: no Authorization header (or the admin token) is the admin; `Bearer <token>` is the
   * ServiceAccount the token was issued to while the token has not expired and that ServiceAccount (the same one,
   * by uid) still exists. Anything else is 401.
   */
  authenticate(authorization: string | undefined): UserInfo {
    if (authorization === undefined) return ADMIN_USER;
    const match = /^bearer\s+(\S+)\s*$/i.exec(authorization.trim());
    if (match && this.adminToken !== undefined && match[1] === this.adminToken) return ADMIN_USER;
    const record = match ? this.tokens.find(match[1]!) : undefined;
    if (!record || this.tokens.isExpired(record)) throw unauthorized();
    const account = this.store.get("serviceaccounts", record.namespace, record.serviceAccount);
    if (!account || account.metadata.uid !== record.serviceAccountUid) throw unauthorized();
    return {
      username: formatServiceAccountUser(record.namespace, record.serviceAccount),
      uid: account.metadata.uid,
      groups: ["system:serviceaccounts", `system:serviceaccounts:${record.namespace}`, "system:authenticated"],
    };
  }

  /** The RBAC decision on one request, from the Roles and bindings stored now. */
  decide(user: UserInfo, attributes: RequestAttributes): Decision {
    return authorize(user, attributes, this.readRbacObjects());
  }

  /** Throws the 403 kube-apiserver would send unless every one of the requests is allowed (checked in order). */
  require(user: UserInfo, ...requests: RequestAttributes[]): void {
    for (const attributes of requests) {
      const decision = this.decide(user, attributes);
      if (!decision.allowed) throw forbidden(user, attributes, decision.reason);
    }
  }

  readRbacObjects(): RbacObjects {
    return {
      roles: this.store.list("roles.rbac.authorization.k8s.io"),
      roleBindings: this.store.list("rolebindings.rbac.authorization.k8s.io"),
      clusterRoles: this.store.list("clusterroles.rbac.authorization.k8s.io"),
      clusterRoleBindings: this.store.list("clusterrolebindings.rbac.authorization.k8s.io"),
    };
  }
}
