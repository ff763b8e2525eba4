// What every warm-capacity call is handed, and the one way they run kubectl: with the caller's signal, cancellable.
import { CancelledError } from "../errors.js";
import type { ClusterTarget } from "../cluster/kubectl/kubectl-args.js";
import type { Kubectl, KubectlOutput } from "../cluster/kubectl/kubectl.js";

export interface WarmDeps {
  readonly kubectl: Kubectl;
  readonly target: ClusterTarget;
  /** Aborts the call in flight (CancelledError); absent: each call runs to its request timeout. */
  readonly signal?: AbortSignal;
  /** Injected for tests. */
  readonly now?: () => number;
}

/** Runs one API call; throws CancelledError when the signal was aborted meanwhile, else resolves with how it ended. */
export async function runWarmCall(deps: WarmDeps, args: readonly string[], stdin?: string): Promise<KubectlOutput> {
  const result = await deps.kubectl.run(args, { ...(stdin === undefined ? {} : { stdin }), ...(deps.signal ? { signal: deps.signal } : {}) });
  if (deps.signal?.aborted) throw new CancelledError();
  return result;
}
