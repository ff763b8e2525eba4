// Routes each call of the service's one shared cluster to the run that made it, so that a run's run.log records its cluster calls as the CLI's does.
import { AsyncLocalStorage } from "node:async_hooks";
import type { CallListeners } from "../cluster/transports/open-cluster.js";
import type { RunEventInput } from "../events/run-events.js";

/** The listeners to open the cluster with, and how a run's work is tied to its log. */
export interface ClusterCallRouter {
  readonly listeners: CallListeners;
  /** Runs `work`; every cluster call made from within it (its async continuations included) is told to `emit`. */
  withClusterCalls<T>(emit: (event: RunEventInput) => void, work: () => Promise<T>): Promise<T>;
}

/**
 * The run is found from the async context the call was made in: a call the transport makes for nobody (a watch
 * shared by every run, started by the first) goes to the run that started it, or to no run.
 */
export function createClusterCallRouter(): ClusterCallRouter {
  const current = new AsyncLocalStorage<(event: RunEventInput) => void>();
  return {
    listeners: {
      kubectl: (args) => current.getStore()?.({ kind: "kubectl", args }),
      api: (call) => current.getStore()?.({ kind: "api-call", ...call }),
    },
    withClusterCalls: (emit, work) => current.run(emit, work),
  };
}
