// What one of our Jobs is (a run or a warm placeholder), what state it is in, and whether gc may remove it: pure.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import { formatDuration } from "../core/duration.js";
import {
  readAdoptedFrom,
  readCancelRequest,
  readHeartbeat,
  readInstance,
  readKeptAt,
  readOwner,
  readTime,
  type CancelRequest,
} from "../manifests/job-annotations.js";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, ROLE_LABEL, RUN_ID_ANNOTATION, WARM_ROLE } from "../manifests/labels.js";
import { formatProcessIdentity, type ProcessIdentity } from "../manifests/owner.js";
import { readJobDeadline } from "../warm/placeholder.js";
import type { LeaseState } from "../manifests/instance-lease.js";

/** A run (one workflow run's Job), or a warm placeholder (one pod that only waits, holding a node for the next run). */
export type JobRole = "run" | "warm";

/** Everything gc and list read from one Job. Times are epoch ms. */
export interface JobFacts {
  readonly name: string;
  readonly namespace: string;
  readonly role: JobRole;
  /** The run's id as given (its annotation); undefined for placeholders. */
  readonly runId: string | undefined;
  readonly createdAt: number | undefined;
  /** Set when the Job is over: how (`Complete`, `Failed (DeadlineExceeded)`) and when, if the Job says. */
  readonly finished: { readonly how: string; readonly at: number | undefined } | undefined;
  /** A delete was asked for (deletionTimestamp): it is going. */
  readonly deleting: boolean;
  /** The run's last sign of life (its heartbeat annotation, else its creation). */
  readonly heartbeat: { readonly at: number; readonly from: "annotation" | "creation" } | undefined;
  readonly owner: ProcessIdentity | undefined;
  /** The serve instance that owns the run (`--instance`), and the one it was adopted from, if any. */
  readonly instance: string | undefined;
  readonly adoptedFrom: string | undefined;
  readonly cancelRequest: CancelRequest | undefined;
  /** When the runner left the Job on purpose (--keep). */
  readonly keptAt: number | undefined;
  /** status.startTime (else creationTimestamp) + activeDeadlineSeconds: the Job controller ends the Job then, whatever it does (readJobDeadline). */
  readonly deadlineAt: number | undefined;
}

/** Whether a Job carries our managed-by label (list and gc select by it; this re-checks what kubectl returned). */
export function isOurJob(job: IJob): boolean {
  return job.metadata?.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE;
}

/** The Job's role: `warm` when it carries `knotless.dev/role=warm`, a run otherwise. */
export function readJobRole(job: IJob): JobRole {
  return job.metadata?.labels?.[ROLE_LABEL] === WARM_ROLE ? "warm" : "run";
}

/** How and when the Job ended: completionTime, or a Complete or Failed condition that is True; undefined while it lasts. */
export function readFinished(job: IJob): JobFacts["finished"] {
  const conditions = job.status?.conditions ?? [];
  const failed = conditions.find((c) => c.type === "Failed" && c.status === "True");
  if (failed)
    return {
      how: failed.reason ? `Failed (${failed.reason})` : "Failed",
      at: readTime(failed.lastTransitionTime as string | undefined),
    };
  const complete = conditions.find((c) => c.type === "Complete" && c.status === "True");
  const completionTime = readTime(job.status?.completionTime as string | undefined);
  if (complete || completionTime !== undefined)
    return { how: "Complete", at: completionTime ?? readTime(complete?.lastTransitionTime as string | undefined) };
  return undefined;
}

/** Reads the facts of one Job. */
export function readJobFacts(job: IJob): JobFacts {
  const role = readJobRole(job);
  const createdAt = readTime(job.metadata?.creationTimestamp as string | undefined);
  return {
    name: job.metadata?.name ?? "",
    namespace: job.metadata?.namespace ?? "",
    role,
    runId: role === "run" ? job.metadata?.annotations?.[RUN_ID_ANNOTATION] : undefined,
    createdAt,
    finished: readFinished(job),
    deleting: job.metadata?.deletionTimestamp !== undefined,
    heartbeat: readHeartbeat(job),
    owner: readOwner(job),
    instance: role === "run" ? readInstance(job) : undefined,
    adoptedFrom: role === "run" ? readAdoptedFrom(job) : undefined,
    cancelRequest: readCancelRequest(job),
    keptAt: readKeptAt(job),
    deadlineAt: readJobDeadline(job),
  };
}

/** What gc may remove, and when. */
export interface GcPolicy {
  /** A run whose heartbeat is older than this is taken for abandoned (its runner died). */
  readonly staleAfterMs: number;
  /** Only Jobs older than this are removed at all (absent: any age). */
  readonly olderThanMs?: number;
}

/** gc's decision on one Job, with the reason it prints. */
export interface GcVerdict {
  readonly action: "remove" | "spare";
  readonly reason: string;
}

/**
 * Decides whether gc removes a Job: one whose run is over (finished), a run whose heartbeat is older than the
 * policy's stale-after (never a run with a fresh heartbeat, whatever its age, nor one whose owning instance's Lease
 * is live in `leases`), a placeholder past its warm time (start + activeDeadlineSeconds). Spares a Job being deleted,
 * a Job younger than --older-than, a Job kept on purpose until it finishes, and live placeholders.
 */
export function judgeJob(
  facts: JobFacts,
  now: number,
  policy: GcPolicy,
  leases?: ReadonlyMap<string, LeaseState>,
): GcVerdict {
  const spare = (reason: string): GcVerdict => ({ action: "spare", reason });
  const remove = (reason: string): GcVerdict => ({ action: "remove", reason });
  if (facts.deleting) return spare("already being deleted");
  if (
    policy.olderThanMs !== undefined &&
    (facts.createdAt === undefined || now - facts.createdAt <= policy.olderThanMs)
  ) {
    return spare(
      `not older than --older-than ${formatDuration(policy.olderThanMs)}${facts.createdAt === undefined ? "" : ` (age ${formatDuration(now - facts.createdAt)})`}`,
    );
  }
  if (facts.finished)
    return remove(
      `finished: ${facts.finished.how}${facts.finished.at === undefined ? "" : ` ${formatDuration(Math.max(0, now - facts.finished.at))} ago`}`,
    );
  if (facts.role === "warm") {
    if (facts.deadlineAt === undefined)
      return spare("warm placeholder without activeDeadlineSeconds: it ends only when it finishes");
    if (facts.deadlineAt <= now)
      return remove(`warm placeholder past its warm time (${formatDuration(now - facts.deadlineAt)} ago)`);
    return spare(`warm placeholder, ${formatDuration(facts.deadlineAt - now)} left`);
  }
  if (facts.keptAt !== undefined)
    return spare("kept on purpose (--keep): its pod stops itself once idle, and then it is finished");
  const lease = facts.instance === undefined ? undefined : leases?.get(facts.instance);
  if (lease?.live)
    return spare(
      `its instance ${facts.instance} holds a live Lease${lease.expiresAt === undefined ? "" : ` (${formatDuration(lease.expiresAt - now)} left)`}: never stale while it does`,
    );
  if (!facts.heartbeat) return spare("no heartbeat and no creation time to judge it by");
  const age = Math.max(0, now - facts.heartbeat.at);
  const beat = `${facts.heartbeat.from === "annotation" ? "heartbeat" : "no heartbeat yet, created"} ${formatDuration(age)} ago`;
  const owner = facts.owner ? `, owner ${formatProcessIdentity(facts.owner)}` : "";
  if (age > policy.staleAfterMs)
    return remove(`${beat}, stale after ${formatDuration(policy.staleAfterMs)}: its runner is gone${owner}`);
  return spare(`${beat}: its runner is alive${owner}`);
}
