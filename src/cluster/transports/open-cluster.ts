// The one place a command or the service makes its cluster: the transport chosen (--transport), pointed where the options say.
import type { Cluster, ClusterTarget } from "../cluster.js";
import type { ApiCall } from "../api/api-client.js";
import { homedir } from "node:os";
import { InputError } from "../../core/errors.js";
import { listKubeconfigFiles } from "../kubeconfig-namespace.js";
import { ConfigError } from "../errors.js";
import { openApiCluster } from "../api/open-api-cluster.js";
import { Kubectl } from "../kubectl/kubectl.js";
import { KubectlCluster } from "../kubectl/kubectl-cluster.js";

/** How to talk to the cluster: one kubectl process per call, or the API spoken in-process. */
export type TransportName = "kubectl" | "api";

/** What a command makes its cluster from, resolved at the edge (resolveClusterOptions). */
export interface ClusterSetting {
  readonly target: ClusterTarget;
  readonly kubectlPath: string;
  /** Default api. */
  readonly transport?: TransportName;
}

/** Who is told of each call the cluster makes (the run's log): a kubectl process's arguments, or an API request. */
export interface CallListeners {
  readonly kubectl?: (args: readonly string[]) => void;
  readonly api?: (call: ApiCall) => void;
}

/**
 * The cluster of the chosen transport (api unless told kubectl): kubectl, over one kubectl client made here with `env` and `onCall.kubectl` (every
 * printed command names its binary); or the API spoken in-process, over the kubeconfig kubectl would read (`env`'s
 * $KUBECONFIG, else ~/.kube/config, unless --kubeconfig), whose exec credential plugins inherit `env`, each request told to `onCall.api`. Loads the
 * transport's modules only when called, so `--help` and bad input stay fast. A kubeconfig the API transport cannot
 * use is an InputError, before any request.
 */
export async function openCluster(
  setting: ClusterSetting,
  env: NodeJS.ProcessEnv,
  onCall: CallListeners = {},
): Promise<{ cluster: Cluster }> {
  if (setting.transport !== "kubectl") {
    const { kubeconfig, context } = setting.target;
    const selection = {
      files: listKubeconfigFiles(kubeconfig, env, homedir()),
      explicit: kubeconfig !== undefined,
      ...(context === undefined ? {} : { context }),
    };
    try {
      return { cluster: await openApiCluster(selection, { env, ...(onCall.api ? { onCall: onCall.api } : {}) }) };
    } catch (error) {
      if (error instanceof ConfigError) throw new InputError(error.message);
      throw error;
    }
  }
  const kubectl = new Kubectl({
    binary: setting.kubectlPath,
    env,
    ...(onCall.kubectl ? { onCall: onCall.kubectl } : {}),
  });
  return { cluster: new KubectlCluster(kubectl, setting.target) };
}
