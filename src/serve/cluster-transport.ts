// How serve reaches the cluster: one typed setting, so that switching to the in-process API transport (issue 26) is one new case here.
import type { Kubectl } from "../k8s/kubectl.js";

/** Today's transport: kubectl, spawned per call, with the environment resolved at the CLI edge. */
export type ServeTransport = { readonly kind: "kubectl"; readonly binary: string; readonly env: NodeJS.ProcessEnv };

/** The cluster client every run of the service shares. */
export async function createClusterClient(transport: ServeTransport): Promise<Kubectl> {
  const { Kubectl: KubectlClient } = await import("../k8s/kubectl.js");
  return new KubectlClient({ binary: transport.binary, env: transport.env });
}
