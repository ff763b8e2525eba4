// Builds the API transport's Cluster from a kubeconfig selection: resolve it once, one client, one set of watches.
import { ApiClient, type ApiCall } from "./api-client.js";
import { ApiCluster, type ApiClusterOptions } from "./api-cluster.js";
import type { KubeconfigSelection } from "./kubeconfig.js";
import { loadKubeconfig } from "./load-kubeconfig.js";

export interface OpenApiClusterOptions extends ApiClusterOptions {
  /** The environment exec credential plugins inherit (the CLI's env, passed down). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** A request without its own timeout gets this (default 30 s). */
  readonly requestTimeoutMs?: number;
  /** Told of every request (method, path with query, status, duration; never a header or body). */
  readonly onCall?: (call: ApiCall) => void;
}

/**
 * Reads the kubeconfig (ConfigError for anything kubectl would refuse or the transport cannot do; no request is
 * sent) and returns the Cluster over it. Share the result between runs: it holds the connection pool and the watches.
 */
export async function openApiCluster(
  selection: KubeconfigSelection,
  options: OpenApiClusterOptions,
): Promise<ApiCluster> {
  const kubeconfig = await loadKubeconfig(selection);
  const client = new ApiClient({
    kubeconfig,
    env: options.env,
    ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
    ...(options.onCall ? { onCall: options.onCall } : {}),
  });
  const kubeconfigPath = selection.explicit ? selection.files[0] : undefined;
  return new ApiCluster(client, { ...options, ...(kubeconfigPath === undefined ? {} : { kubeconfigPath }) });
}
