// Pure: reads the admin cluster entry from `kubectl config view` and builds the scoped kubeconfig (same server and CA, the token, the namespace pinned).
import { stringify } from "../../core/lazy-yaml.js";
import { InputError } from "../../core/errors.js";
import type { CredentialIdentity } from "./credential-objects.js";

/** The admin kubeconfig's cluster, as kubectl resolved it: its name and its entry (server, CA data, TLS options). */
export interface AdminCluster {
  readonly name: string;
  /** Copied as it is: server, certificate-authority-data, tls-server-name, proxy-url... never the admin's credentials, which live under `users`. */
  readonly cluster: Readonly<Record<string, unknown>>;
  readonly server: string;
}

/**
 * The one cluster of `kubectl config view --raw --minify --flatten -o json`. InputError when there is none, when
 * it has no server, or when the server is plain http: kubectl sends a kubeconfig's token only over https, so a
 * scoped kubeconfig for it would go out with no credential at all.
 */
export function readAdminCluster(configView: unknown): AdminCluster {
  let config: { clusters?: Array<{ name?: unknown; cluster?: Record<string, unknown> }> } | null;
  try {
    config = (typeof configView === "string" ? JSON.parse(configView) : configView) as typeof config;
  } catch {
    throw new InputError("kubectl config view printed no JSON: is the kubeconfig valid?");
  }
  const entry = config?.clusters?.[0];
  const server = entry?.cluster?.server;
  if (!entry?.cluster || typeof server !== "string" || server === "")
    throw new InputError("the admin kubeconfig names no cluster with a server for its context");
  if (!/^https:\/\//i.test(server)) {
    throw new InputError(
      `the admin kubeconfig's server ${server} is not https: kubectl sends a kubeconfig's token only over TLS, so the scoped kubeconfig would reach it with no credential`,
    );
  }
  return {
    name: typeof entry.name === "string" && entry.name !== "" ? entry.name : "cluster",
    cluster: entry.cluster,
    server,
  };
}

/** The kubeconfig of the scoped identity: one cluster, one user (the token), one context pinning the namespace. */
export function buildScopedKubeconfig(admin: AdminCluster, identity: CredentialIdentity, token: string): string {
  const context = `${identity.name}@${admin.name}`;
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: admin.name, cluster: admin.cluster }],
    users: [{ name: identity.name, user: { token } }],
    contexts: [{ name: context, context: { cluster: admin.name, user: identity.name, namespace: identity.namespace } }],
    "current-context": context,
    preferences: {},
  });
}

/** What a dry run shows for the kubeconfig: its shape, with the server and the token left as placeholders. */
export function describeScopedKubeconfig(identity: CredentialIdentity): string {
  const admin: AdminCluster = {
    name: "<the admin context's cluster>",
    server: "<its server>",
    cluster: { server: "<the admin kubeconfig's server>", "certificate-authority-data": "<its CA>" },
  };
  return buildScopedKubeconfig(admin, identity, "<the issued token: never printed>");
}
