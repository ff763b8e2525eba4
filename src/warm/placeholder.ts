// Recognises warm placeholders in Job objects, with their size and remaining time: pure, for claim, top-up, list and gc.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, ROLE_LABEL, WARM_ROLE } from "../manifests/labels.js";
import { buildPlaceholderName } from "../manifests/placeholder-manifest.js";
import { coversQuantity, parseQuantity } from "../core/quantity.js";

/**
 * - `pending`: its pod waits for a node (one is being rented for it);
 * - `held`: its pod runs on a node, which it holds;
 * - `expired`: its deadline has passed but the cluster has not ended it yet;
 * - `finished`: the cluster ended it (deadline) and will delete it (TTL);
 * - `deleting`: someone deleted it (a run claimed it, a release) and it is going.
 */
export type PlaceholderState = "pending" | "held" | "expired" | "finished" | "deleting";

export interface Placeholder {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly resourceVersion: string;
  /** What its pod requests; a run whose requests these cover can claim it. */
  readonly cpu: string;
  readonly memory: string;
  /** Its duration (activeDeadlineSeconds). */
  readonly seconds: number;
  /** Epoch ms its deadline passes: the Job's start (else its creation) plus its duration. */
  readonly expiresAt: number;
  readonly remainingMs: number;
  readonly state: PlaceholderState;
}

/** The resources a run asks for, as quantities. */
export interface CapacityRequest {
  readonly cpu: string;
  readonly memory: string;
}

/** Whether the Job carries our labels with the warm role. */
export function isPlaceholderJob(job: IJob): boolean {
  const labels = job.metadata?.labels ?? {};
  return labels[MANAGED_BY_LABEL] === MANAGED_BY_VALUE && labels[ROLE_LABEL] === WARM_ROLE;
}

function readState(job: IJob, remainingMs: number): PlaceholderState {
  if (job.metadata?.deletionTimestamp) return "deleting";
  const ended = (job.status?.conditions ?? []).some(
    (c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True",
  );
  if (ended || job.status?.completionTime) return "finished";
  if (remainingMs <= 0) return "expired";
  return (job.status?.ready ?? 0) > 0 ? "held" : "pending";
}

/**
 * Epoch ms a Job's activeDeadlineSeconds passes: counted, as the Job controller counts it, from `status.startTime`
 * (else the creation); undefined without a deadline or a time. One definition for the claim, top-up, list and gc.
 */
export function readJobDeadline(job: IJob): number | undefined {
  const seconds = job.spec?.activeDeadlineSeconds;
  const startedAt = Date.parse(String(job.status?.startTime ?? job.metadata?.creationTimestamp ?? ""));
  return typeof seconds === "number" && !Number.isNaN(startedAt) ? startedAt + seconds * 1000 : undefined;
}

/** The placeholder a Job is, as of `now` (epoch ms); undefined when the Job is not one of our placeholders or is malformed. */
export function readPlaceholder(job: IJob, now: number): Placeholder | undefined {
  if (!isPlaceholderJob(job)) return undefined;
  const { name, namespace, uid, resourceVersion } = job.metadata ?? {};
  const seconds = job.spec?.activeDeadlineSeconds;
  const requests = job.spec?.template?.spec?.containers?.[0]?.resources?.requests ?? {};
  const cpu = String(requests.cpu ?? "");
  const memory = String(requests.memory ?? "");
  const expiresAt = readJobDeadline(job);
  if (!name || !namespace || !uid || !resourceVersion || typeof seconds !== "number" || expiresAt === undefined)
    return undefined;
  if (parseQuantity(cpu) === undefined || parseQuantity(memory) === undefined) return undefined;
  const remainingMs = Math.max(0, expiresAt - now);
  return {
    namespace,
    name,
    uid,
    resourceVersion,
    cpu,
    memory,
    seconds,
    expiresAt,
    remainingMs,
    state: readState(job, remainingMs),
  };
}

/** The placeholders among listed Jobs. */
export function readPlaceholders(jobs: readonly IJob[], now: number): Placeholder[] {
  return jobs.flatMap((job) => readPlaceholder(job, now) ?? []);
}

/** The placeholders in a JobList as JSON text; throws on text that is not one. */
export function readPlaceholderList(json: string, now: number): Placeholder[] {
  const list = JSON.parse(json) as { items?: IJob[] };
  if (!Array.isArray(list.items)) throw new Error("kubectl printed no list of Jobs");
  return readPlaceholders(list.items, now);
}

/** Whether it still holds (or is getting) a node and may be claimed or counted. */
export function isLive(placeholder: Placeholder): boolean {
  return (placeholder.state === "pending" || placeholder.state === "held") && placeholder.remainingMs > 0;
}

/** Whether its pod's requests are at least the run's, so the run's pod fits where it was. */
export function coversRequest(placeholder: Placeholder, request: CapacityRequest): boolean {
  return coversQuantity(placeholder.cpu, request.cpu) && coversQuantity(placeholder.memory, request.memory);
}

/** The live placeholders a run may claim, best first: holding a node, then the least oversized, then the longest left. */
export function orderClaimCandidates(placeholders: readonly Placeholder[], request: CapacityRequest): Placeholder[] {
  const excess = (p: Placeholder): number => (parseQuantity(p.cpu) ?? 0) - (parseQuantity(request.cpu) ?? 0);
  return placeholders
    .filter((p) => isLive(p) && coversRequest(p, request))
    .sort(
      (a, b) =>
        Number(b.state === "held") - Number(a.state === "held") ||
        excess(a) - excess(b) ||
        b.remainingMs - a.remainingMs,
    );
}

/** Slot names (`knotless-warm-0` … `knotless-warm-<maxWarm-1>`) that no listed placeholder uses, lowest first. */
export function listFreeSlotNames(placeholders: readonly Placeholder[], maxWarm: number): string[] {
  const taken = new Set(placeholders.map((p) => p.name));
  return Array.from({ length: maxWarm }, (_, slot) => buildPlaceholderName(slot)).filter((name) => !taken.has(name));
}
