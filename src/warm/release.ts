// Releases the warm capacity at once: deletes every placeholder of ours in the namespace (`warm --release`).
import { buildDeleteJobsBySelectorArgs } from "../cluster/kubectl/kubectl-args.js";
import { buildPlaceholderSelector } from "../k8s/labels.js";
import { runWarmCall, type WarmDeps } from "./warm-deps.js";
import { classifyWarmFailure } from "./top-up.js";

export interface ReleaseReport {
  /** Names of the placeholders deleted. */
  readonly deleted: readonly string[];
  readonly detail: string;
}

/** Deletes every placeholder (and its pod) now; none is fine. Throws InputError or InfraError when kubectl cannot. */
export async function releasePlaceholders(deps: WarmDeps): Promise<ReleaseReport> {
  const result = await runWarmCall(deps, buildDeleteJobsBySelectorArgs(deps.target, buildPlaceholderSelector()));
  if (result.exitCode !== 0) throw classifyWarmFailure("could not release the warm placeholders", result.stderr);
  // kubectl prints one `job.batch "NAME" deleted` line per Job.
  const deleted = [...result.stdout.matchAll(/^job(?:\.batch)? "([^"]+)" deleted/gm)].map((match) => match[1]!);
  return { deleted, detail: deleted.length === 0 ? "no warm placeholder to release" : `released ${deleted.length} warm placeholder(s): ${deleted.join(", ")}` };
}
