// The one place the CLI makes its cluster: the transport chosen by --transport, pointed where the options say.
import type { Cluster, ClusterTarget } from "../cluster/cluster.js";
import type { Kubectl } from "../cluster/kubectl/kubectl.js";
import { InputError } from "../errors.js";
import type { TransportName } from "./cluster-options.js";

/** What a command makes its cluster from, resolved at the edge (resolveClusterOptions). */
export interface ClusterSetting {
  readonly target: ClusterTarget;
  readonly kubectlPath: string;
  /** Default kubectl. */
  readonly transport?: TransportName;
}

/**
 * The cluster of the chosen transport: kubectl, over one kubectl client made here with `env` and `onCall` (every
 * printed command names its binary). Loads the transport's modules only when called, so `--help` and bad input stay
 * fast. The API transport is not in this build: InputError (resolveClusterOptions refuses it first).
 */
export async function openCluster(setting: ClusterSetting, env: NodeJS.ProcessEnv, onCall?: (args: readonly string[]) => void): Promise<{ cluster: Cluster; kubectl: Kubectl }> {
  if (setting.transport === "api") throw new InputError("--transport api: the in-process API transport is not available in this build yet; use --transport kubectl (the default)");
  const [{ Kubectl }, { KubectlCluster }] = await Promise.all([import("../cluster/kubectl/kubectl.js"), import("../cluster/kubectl/kubectl-cluster.js")]);
  const kubectl = new Kubectl({ binary: setting.kubectlPath, env, ...(onCall ? { onCall } : {}) });
  return { cluster: new KubectlCluster(kubectl, setting.target), kubectl };
}
