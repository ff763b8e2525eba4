// Claims a warm placeholder for a run: lists ours, deletes the best one with preconditions; the delete that succeeds is the claim.
import { formatDuration } from "../core/duration.js";
import { ConflictError, NotFoundError } from "../cluster/errors.js";
import { CancelledError, describeError } from "../core/errors.js";
import { buildPlaceholderSelector } from "../manifests/labels.js";
import {
  coversRequest,
  isLive,
  orderClaimCandidates,
  readPlaceholder,
  readPlaceholders,
  type CapacityRequest,
  type Placeholder,
} from "./placeholder.js";
import { runWarmCall as runCall, type WarmDeps } from "./warm-deps.js";

export type { WarmDeps } from "./warm-deps.js";

/** Whether the run starts on a node a placeholder held ("warm") or has to wait for whatever the cluster gives it ("cold"). */
export type Capacity = "warm" | "cold";

export type ClaimOutcome =
  | { readonly capacity: "warm"; readonly placeholder: Placeholder; readonly detail: string }
  | { readonly capacity: "cold"; readonly detail: string };

/** Placeholders tried before the run gives up and goes cold; each one a delete (and, on Conflict, a read). */
const MAX_CANDIDATES = 3;
/** Deletes of one placeholder refused with Conflict (it changed: its pod became ready, say) before the next is tried. */
const MAX_CONFLICTS = 2;

type Attempt =
  | { readonly kind: "claimed" }
  | { readonly kind: "lost"; readonly why: string }
  | { readonly kind: "failed"; readonly why: string };

/**
 * Looks for a live placeholder whose requests cover the run's and claims it by deleting it (background propagation,
 * preconditions on its uid and resourceVersion), so that the run's Job, created right after, lands on the node it
 * held. Never throws but CancelledError: a failed lookup or claim is a cold start, said in `detail`.
 */
export async function claimPlaceholder(deps: WarmDeps, request: CapacityRequest): Promise<ClaimOutcome> {
  const now = deps.now ?? Date.now;
  let placeholders: Placeholder[];
  try {
    placeholders = readPlaceholders(
      await runCall(deps, (options) =>
        deps.cluster.listJobs(deps.target.namespace, buildPlaceholderSelector(), options),
      ),
      now(),
    );
  } catch (error) {
    if (error instanceof CancelledError) throw error;
    return { capacity: "cold", detail: `could not look for warm placeholders: ${describeError(error)}` };
  }
  const candidates = orderClaimCandidates(placeholders, request).slice(0, MAX_CANDIDATES);
  if (candidates.length === 0) return { capacity: "cold", detail: describeNone(placeholders, request) };
  const lost: string[] = [];
  for (const candidate of candidates) {
    const attempt = await claimOne(deps, candidate, request, now);
    if (attempt.kind === "claimed") {
      const held = candidate.state === "held" ? "held a node" : "was waiting for a node";
      return {
        capacity: "warm",
        placeholder: candidate,
        detail: `claimed placeholder ${candidate.namespace}/${candidate.name} (it ${held}, ${formatDuration(candidate.remainingMs)} left)`,
      };
    }
    if (attempt.kind === "failed")
      return {
        capacity: "cold",
        detail: `could not claim placeholder ${candidate.namespace}/${candidate.name}: ${attempt.why}`,
      };
    lost.push(`${candidate.name} (${attempt.why})`);
  }
  return { capacity: "cold", detail: `the warm placeholders were taken first: ${lost.join(", ")}` };
}

/** Deletes one placeholder with preconditions; on Conflict reads it again and retries while it is still a live one that fits. */
async function claimOne(
  deps: WarmDeps,
  first: Placeholder,
  request: CapacityRequest,
  now: () => number,
): Promise<Attempt> {
  let current = first;
  for (let conflicts = 0; ; conflicts++) {
    const preconditions = { uid: current.uid, resourceVersion: current.resourceVersion };
    try {
      const deleted = await runCall(deps, (options) =>
        deps.cluster.deleteJob(current.namespace, current.name, { ...options, preconditions }),
      );
      if (deleted === "deleted") return { kind: "claimed" };
      return { kind: "lost", why: "another run claimed it, or it ended" };
    } catch (error) {
      if (error instanceof CancelledError) throw error;
      if (!(error instanceof ConflictError)) return { kind: "failed", why: describeError(error) };
    }
    if (conflicts + 1 >= MAX_CONFLICTS) return { kind: "lost", why: "it kept changing" };
    let fresh: Placeholder | undefined;
    try {
      fresh = readPlaceholder(
        await runCall(deps, (options) => deps.cluster.getJob(current.namespace, current.name, options)),
        now(),
      );
    } catch (error) {
      if (error instanceof CancelledError) throw error;
      return { kind: "lost", why: error instanceof NotFoundError ? "another run claimed it" : describeError(error) };
    }
    if (!fresh || !isLive(fresh) || !coversRequest(fresh, request))
      return { kind: "lost", why: "it changed into one this run cannot use" };
    current = fresh;
  }
}

function describeNone(placeholders: readonly Placeholder[], request: CapacityRequest): string {
  const live = placeholders.filter(isLive);
  if (live.length === 0) return "no warm placeholder";
  return `no warm placeholder covers ${request.cpu} cpu and ${request.memory} memory (${live.map((p) => `${p.name}: ${p.cpu}, ${p.memory}`).join("; ")})`;
}
