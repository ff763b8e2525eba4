// Releases the warm capacity at once: deletes every placeholder of ours in the namespace (`warm --release`).
import type { WarmCluster } from "../cluster/cluster.js";
import { buildPlaceholderSelector } from "../manifests/labels.js";
import { runWarmCall, type WarmDeps } from "./warm-deps.js";
import { classifyWarmFailure } from "./top-up.js";

export interface ReleaseReport {
  /** Names of the placeholders deleted. */
  readonly deleted: readonly string[];
  readonly detail: string;
}

/** Deletes every placeholder (and its pod) now; none is fine. Throws InputError or InfraError when the cluster cannot. */
export async function releasePlaceholders(deps: WarmDeps & { readonly cluster: WarmCluster }): Promise<ReleaseReport> {
  let deleted: string[];
  try {
    deleted = await runWarmCall(deps, (options) =>
      deps.cluster.deleteJobs(deps.target.namespace, buildPlaceholderSelector(), options),
    );
  } catch (error) {
    throw classifyWarmFailure("could not release the warm placeholders", error);
  }
  return {
    deleted,
    detail:
      deleted.length === 0
        ? "no warm placeholder to release"
        : `released ${deleted.length} warm placeholder(s): ${deleted.join(", ")}`,
  };
}
