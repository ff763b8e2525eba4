// The one place the CLI makes its cluster: the transport chosen by --transport, pointed where the options say.
import type { Cluster, ClusterTarget } from "../cluster/cluster.js";
import type { Kubectl } from "../cluster/kubectl/kubectl.js";

/** What a command makes its cluster from, resolved at the edge. */
export interface ClusterSetting {
  readonly target: ClusterTarget;
  readonly kubectlPath: string;
}

/**
 * The kubectl transport over one kubectl client (made here, with `env` and `onCall`); loads the transport's modules
 * only when called, so `--help` and bad input stay fast. Resolves with both: printed commands name the client's binary.
 */
export async function openCluster(setting: ClusterSetting, env: NodeJS.ProcessEnv, onCall?: (args: readonly string[]) => void): Promise<{ cluster: Cluster; kubectl: Kubectl }> {
  const [{ Kubectl }, { KubectlCluster }] = await Promise.all([import("../cluster/kubectl/kubectl.js"), import("../cluster/kubectl/kubectl-cluster.js")]);
  const kubectl = new Kubectl({ binary: setting.kubectlPath, env, ...(onCall ? { onCall } : {}) });
  return { cluster: new KubectlCluster(kubectl, setting.target), kubectl };
}
