// Pure builder of the kubeconfig that points kubectl at the local cluster (plain http, no credentials).

import { stringify } from "yaml";

export const CONTEXT_NAME = "knotless-local";

export function buildKubeconfig(serverUrl: string, namespace = "default"): string {
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: CONTEXT_NAME, cluster: { server: serverUrl } }],
    users: [{ name: "local-admin", user: {} }],
    contexts: [{ name: CONTEXT_NAME, context: { cluster: CONTEXT_NAME, user: "local-admin", namespace } }],
    "current-context": CONTEXT_NAME,
    preferences: {},
  });
}
