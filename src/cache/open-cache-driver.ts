// Makes the cache driver a run's settings ask for: the directory store on this host (`--cache-dir`), with its gate, or the PVC backend (`--cache-pvc`), whose bytes stay in the pod.
import type { CacheBackend } from "../executor/kubernetes/context.js";
import type { Executor } from "../executor/executor.js";
import type { RunEventInput } from "../events/run-events.js";
import { createArchiveGate } from "./archive-gate.js";
import type { CacheDriver } from "./cache-driver.js";
import { createDirStore } from "./dir-store.js";
import { createHostCacheDriver } from "./host-cache-driver.js";
import { createClusterPodExec, createPvcCacheDriver, formatPvcNonce } from "./pvc-cache.js";
import type { ClusterTarget, RunCluster } from "../cluster/cluster.js";

/** What the PVC backend's in-pod commands need: the cluster and where the run's pod is. */
export interface PodExecContext {
  readonly cluster: RunCluster;
  readonly target: ClusterTarget;
  /** The run's id: the claim's temporary names carry it, so pods never share one. */
  readonly runId: string;
}

/**
 * The driver of `backend` for the run's executor; for the PVC backend only with `pods` (its commands go through
 * kubectl exec), else undefined. The store's own findings (a damaged entry removed, an entry evicted) are
 * warnings and notices in the run's log. Every archive is checked with the cache's paths as its roots by the gate, on
 * each way into a pod; saves store what the pod packed, unchecked, and an entry refused on an exact hit is removed.
 */
export function openCacheDriver(
  backend: CacheBackend,
  executor: Executor,
  emit: (event: RunEventInput) => void,
  pods?: PodExecContext,
): CacheDriver | undefined {
  if (backend.kind === "pvc") {
    if (!pods) return undefined;
    return createPvcCacheDriver({
      // The pod is known only once the run has set up (the driver is made before): resolved on each call.
      exec: (argv) => {
        const pod = executor.pod;
        if (!pod) return Promise.reject(new Error("the run's pod is not running"));
        return createClusterPodExec(pods.cluster, executor.namespace ?? pods.target.namespace, pod.name)(argv);
      },
      repo: backend.repo,
      claim: backend.claim,
      maxBytes: backend.maxBytes,
      nonce: formatPvcNonce(pods.runId),
      now: Date.now,
      warn: (message) => emit({ kind: "notice", level: "warning", message }),
    });
  }
  const store = createDirStore({
    dir: backend.dir,
    maxBytes: backend.maxBytes,
    onEvent: (event) =>
      emit(
        event.kind === "damaged"
          ? {
              kind: "notice",
              level: "warning",
              message: `cache store: removed a damaged entry ${event.path}: ${event.reason}`,
            }
          : {
              kind: "notice",
              level: "info",
              message: `cache store: evicted ${event.entry.key} (${event.entry.bytes} bytes, least recently used) to stay within ${backend.maxBytes} bytes`,
            },
      ),
  });
  return createHostCacheDriver({
    store,
    repo: backend.repo,
    executor,
    createGate: (spec, compression, output) => createArchiveGate(compression, { roots: spec.paths, output }),
    description: `the directory ${backend.dir} on this host`,
    inform: (message) => emit({ kind: "notice", level: "info", message }),
  });
}
