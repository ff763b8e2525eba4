// Reads what the runner's annotations on a Job say (heartbeat, owner, cancel request, kept): pure, for the run and for gc.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import {
  CANCEL_REQUESTED_ANNOTATION,
  CANCEL_REQUESTED_BY_ANNOTATION,
  HEARTBEAT_ANNOTATION,
  ADOPTED_FROM_ANNOTATION,
  INSTANCE_ANNOTATION,
  KEPT_ANNOTATION,
  OWNER_ANNOTATION,
} from "./labels.js";
import { parseProcessIdentity, type ProcessIdentity } from "./owner.js";

/** A cancel asked for through the cluster: when, and by whom when the requester said. */
export interface CancelRequest {
  readonly at: string;
  readonly by: ProcessIdentity | undefined;
}

function annotationsOf(job: IJob): Readonly<Record<string, string>> {
  return job.metadata?.annotations ?? {};
}

/** Epoch ms of an ISO time, or undefined when the text is not one. */
export function readTime(text: string | undefined): number | undefined {
  if (text === undefined || text === "") return undefined;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : undefined;
}

/** The cancel requested on the Job, if any (an annotation whose value is not a time still counts: it was asked). */
export function readCancelRequest(job: IJob): CancelRequest | undefined {
  const annotations = annotationsOf(job);
  const at = annotations[CANCEL_REQUESTED_ANNOTATION];
  if (at === undefined) return undefined;
  return { at, by: parseProcessIdentity(annotations[CANCEL_REQUESTED_BY_ANNOTATION]) };
}

/**
 * The run's last sign of life, epoch ms: its heartbeat annotation, else (before the first refresh, or a runner of an
 * older version) the Job's creation. `from` says which.
 */
export function readHeartbeat(
  job: IJob,
): { readonly at: number; readonly from: "annotation" | "creation" } | undefined {
  const beat = readTime(annotationsOf(job)[HEARTBEAT_ANNOTATION]);
  if (beat !== undefined) return { at: beat, from: "annotation" };
  const created = readTime(job.metadata?.creationTimestamp as string | undefined);
  return created === undefined ? undefined : { at: created, from: "creation" };
}

/** The runner process recorded at create, if any. */
export function readOwner(job: IJob): ProcessIdentity | undefined {
  return parseProcessIdentity(annotationsOf(job)[OWNER_ANNOTATION]);
}

/** When the runner left the Job on purpose (--keep), epoch ms. */
export function readKeptAt(job: IJob): number | undefined {
  const value = annotationsOf(job)[KEPT_ANNOTATION];
  return value === undefined ? undefined : (readTime(value) ?? 0);
}

/** The `serve` instance that owns the run (set at create, changed by an adopter's claim), if any. */
export function readInstance(job: IJob): string | undefined {
  return annotationsOf(job)[INSTANCE_ANNOTATION] || undefined;
}

/** The instance the run was adopted from, if it was. */
export function readAdoptedFrom(job: IJob): string | undefined {
  return annotationsOf(job)[ADOPTED_FROM_ANNOTATION] || undefined;
}
