// What every warm-capacity call is handed, and the one way they make a cluster call: with the caller's signal, cancellable.
import type { CallOptions, ClusterTarget, PlaceholderCluster } from "../cluster/cluster.js";
import { CancelledError } from "../core/errors.js";

export interface WarmDeps {
  readonly cluster: PlaceholderCluster;
  /** The namespace (pinned, or the context's when `namespaceFromContext`). */
  readonly target: ClusterTarget;
  /** Aborts the call in flight (CancelledError); absent: each call runs to its request timeout. */
  readonly signal?: AbortSignal;
  /** Injected for tests. */
  readonly now?: () => number;
}

/** Makes one cluster call with the deps' signal; throws CancelledError when the signal was aborted meanwhile, else what the call threw. */
export async function runWarmCall<T>(deps: WarmDeps, call: (options: CallOptions) => Promise<T>): Promise<T> {
  let value: T;
  try {
    value = await call(deps.signal ? { signal: deps.signal } : {});
  } catch (error) {
    if (deps.signal?.aborted) throw new CancelledError();
    throw error;
  }
  if (deps.signal?.aborted) throw new CancelledError();
  return value;
}
