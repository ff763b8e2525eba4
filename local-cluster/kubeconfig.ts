// Pure builder of the kubeconfig that points kubectl at the local cluster (plain http, or https with its CA; no credentials).

import { stringify } from "yaml";

export const CONTEXT_NAME = "knotless-local";

/** `tls`: an https server's certificate, inlined as certificate-authority-data, and the admin's bearer token. */
export function buildKubeconfig(
  serverUrl: string,
  namespace = "default",
  tls?: { caPem: string; adminToken: string },
): string {
  const caPem = tls?.caPem;
  const cluster = {
    server: serverUrl,
    ...(caPem ? { "certificate-authority-data": Buffer.from(caPem).toString("base64") } : {}),
  };
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: CONTEXT_NAME, cluster }],
    users: [{ name: "local-admin", user: tls ? { token: tls.adminToken } : {} }],
    contexts: [{ name: CONTEXT_NAME, context: { cluster: CONTEXT_NAME, user: "local-admin", namespace } }],
    "current-context": CONTEXT_NAME,
    preferences: {},
  });
}
