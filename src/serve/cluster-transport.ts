// How serve reaches the cluster: the transport its options chose (kubectl, or the API in-process), opened once for every run.
import type { Cluster } from "../cluster/cluster.js";
import { openCluster, type CallListeners, type ClusterSetting } from "../cluster/transports/open-cluster.js";

/** The cluster setting resolved at the CLI edge, and the environment kubectl or exec credential plugins run with. */
export interface ServeTransport {
  readonly setting: ClusterSetting;
  readonly env: NodeJS.ProcessEnv;
}

/**
 * The cluster every run of the service shares (one connection pool and one watch per collection with the API
 * transport); each call it makes is told to `onCall` (the call router, which finds the run's log).
 */
export async function createClusterClient(transport: ServeTransport, onCall: CallListeners = {}): Promise<Cluster> {
  return (await openCluster(transport.setting, transport.env, onCall)).cluster;
}
