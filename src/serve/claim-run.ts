// Claims a run's Job for an instance: its owner annotation set only at the resourceVersion read, so of two claimers exactly one wins.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { Cluster, Namespace } from "../cluster/cluster.js";
import { ConflictError, NotFoundError } from "../cluster/errors.js";
import { readInstance } from "../manifests/job-annotations.js";
import { ADOPTED_FROM_ANNOTATION, INSTANCE_ANNOTATION } from "../manifests/labels.js";
import { readFinished } from "../ops/classify-job.js";

/** How a claim ended: the Job is now the claimer's, another instance owns it, or there is no run left to take. */
export type ClaimOutcome =
  | { readonly kind: "claimed"; readonly job: IJob }
  | { readonly kind: "taken"; readonly owner: string | undefined }
  | { readonly kind: "gone" }
  | { readonly kind: "over"; readonly how: string };

/** Who claims, and from whom: an adopter claims from the instance whose Lease expired; a restarted instance from itself. */
export interface Claim {
  readonly instance: string;
  readonly from: string;
}

/** Attempts after a 409 before the claim counts as lost: each re-reads the Job and judges it again. */
const CLAIM_ATTEMPTS = 3;

/**
 * Claims the run's Job: reads it, and if it is still owned by `claim.from` and not over, sets its owner annotation to
 * `claim.instance` (and, for an adoption, `adopted-from`) with one merge patch carrying the resourceVersion read. A
 * 409 means the Job changed since: it is read again, so a claim that lost to another claimer ends `taken`. Other
 * failures (ForbiddenError, UnavailableError...) are thrown.
 */
export async function claimRun(
  cluster: Pick<Cluster, "getJob" | "claimJob">,
  namespace: Namespace,
  jobName: string,
  claim: Claim,
): Promise<ClaimOutcome> {
  for (let attempt = 1; ; attempt++) {
    let job: IJob;
    try {
      job = await cluster.getJob(namespace, jobName);
    } catch (error) {
      if (error instanceof NotFoundError) return { kind: "gone" };
      throw error;
    }
    if (job.metadata?.deletionTimestamp !== undefined) return { kind: "over", how: "being deleted" };
    const finished = readFinished(job);
    if (finished) return { kind: "over", how: finished.how };
    const owner = readInstance(job);
    if (owner !== claim.from) return { kind: "taken", owner };
    const version = job.metadata?.resourceVersion;
    if (version === undefined) return { kind: "taken", owner }; // nothing to claim it at: never claim blind
    try {
      const claimed = await cluster.claimJob(namespace, jobName, version, {
        [INSTANCE_ANNOTATION]: claim.instance,
        ...(claim.from === claim.instance ? {} : { [ADOPTED_FROM_ANNOTATION]: claim.from }),
      });
      return { kind: "claimed", job: claimed };
    } catch (error) {
      if (error instanceof NotFoundError) return { kind: "gone" };
      if (error instanceof ConflictError && attempt < CLAIM_ATTEMPTS) continue;
      if (error instanceof ConflictError) return { kind: "taken", owner: undefined };
      throw error;
    }
  }
}
