// `list`: one row per Job of ours (runs and warm placeholders) from the Jobs and their pods, and its text and JSON forms: pure.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { IPod } from "kubernetes-models/v1/Pod";
import { formatDuration } from "../core/duration.js";
import { formatProcessIdentity } from "../manifests/owner.js";
import { readJobFacts, isOurJob, type JobRole } from "./classify-job.js";
import { indexPodsByJob, readPodEnd } from "./cluster-reads.js";
import type { LeaseState } from "../manifests/instance-lease.js";

/** Where a run or placeholder is, as list shows it. */
export type ListPhase = "pending" | "running" | "cancelling" | "complete" | "failed" | "deleting" | "kept";

/** One row of `list`; times are ISO strings and ages milliseconds (null when unknown), as `--json` prints them. */
export interface ListRow {
  readonly job: string;
  readonly namespace: string;
  readonly runId: string | null;
  readonly role: JobRole;
  readonly phase: ListPhase;
  readonly createdAt: string | null;
  readonly ageMs: number | null;
  readonly heartbeatAt: string | null;
  readonly heartbeatAgeMs: number | null;
  /** `<pid>@<host>` of the runner. */
  readonly owner: string | null;
  /** The serve instance that owns the run (`--instance`), and the one it was adopted from. */
  readonly instance: string | null;
  readonly adoptedFrom: string | null;
  /** Whether the owning instance's Lease is live, expired or absent; null without an instance, or Leases unread. */
  readonly lease: "live" | "expired" | "none" | null;
  readonly pod: string | null;
  readonly node: string | null;
  /** Placeholders: time left before start (else creation) + activeDeadlineSeconds. */
  readonly remainingMs: number | null;
  readonly cancelRequestedAt: string | null;
  /** Why the pod ended, once it has (`RunnerIdle`: its idle guard stopped it, its runner gone). */
  readonly podEnd: { readonly reason: string; readonly message: string } | null;
}

function iso(ms: number | undefined): string | null {
  return ms === undefined ? null : new Date(ms).toISOString();
}

/** The phase of a Job from its facts and its pod's phase. */
function readPhase(facts: ReturnType<typeof readJobFacts>, pod: IPod | undefined): ListPhase {
  if (facts.deleting) return "deleting";
  if (facts.finished) return facts.finished.how === "Complete" ? "complete" : "failed";
  if (facts.cancelRequest) return "cancelling";
  if (facts.keptAt !== undefined) return "kept";
  return pod?.status?.phase === "Running" ? "running" : "pending";
}

/** The owning instance's Lease in a word; null for a run of no instance, or when the Leases were not read. */
function readLeaseWord(
  instance: string | undefined,
  leases: ReadonlyMap<string, LeaseState> | undefined,
): ListRow["lease"] {
  if (instance === undefined || leases === undefined) return null;
  const state = leases.get(instance);
  return state === undefined ? "none" : state.live ? "live" : "expired";
}

/** The rows, oldest first. A Job's pod is its newest (a run has one). */
export function buildListRows(
  jobs: readonly IJob[],
  pods: readonly IPod[],
  now: number,
  leases?: ReadonlyMap<string, LeaseState>,
): ListRow[] {
  const podOf = indexPodsByJob(pods);
  return jobs
    .filter(isOurJob)
    .map((job) => {
      const facts = readJobFacts(job);
      const pod = podOf.get(facts.name);
      return {
        job: facts.name,
        namespace: facts.namespace,
        runId: facts.runId ?? null,
        role: facts.role,
        phase: readPhase(facts, pod),
        createdAt: iso(facts.createdAt),
        ageMs: facts.createdAt === undefined ? null : Math.max(0, now - facts.createdAt),
        heartbeatAt: facts.role === "run" && facts.heartbeat?.from === "annotation" ? iso(facts.heartbeat.at) : null,
        heartbeatAgeMs: facts.role === "run" && facts.heartbeat ? Math.max(0, now - facts.heartbeat.at) : null,
        owner: facts.owner ? formatProcessIdentity(facts.owner) : null,
        instance: facts.instance ?? null,
        adoptedFrom: facts.adoptedFrom ?? null,
        lease: readLeaseWord(facts.instance, leases),
        pod: pod?.metadata?.name ?? null,
        node: pod?.spec?.nodeName || null,
        remainingMs:
          facts.role === "warm" && facts.deadlineAt !== undefined ? Math.max(0, facts.deadlineAt - now) : null,
        cancelRequestedAt: facts.cancelRequest?.at ?? null,
        podEnd: readPodEnd(pod) ?? null,
      };
    })
    .sort((a, b) => (a.createdAt ?? "").localeCompare(b.createdAt ?? "") || a.job.localeCompare(b.job));
}

const COLUMNS = [
  "RUN ID",
  "ROLE",
  "PHASE",
  "AGE",
  "HEARTBEAT",
  "OWNER",
  "INSTANCE",
  "NODE",
  "LEFT",
  "POD ENDED",
] as const;

/** `b (lease live)`, `a (lease expired)`, `b (lease live; adopted from a)`; `-` for a run of no instance. */
function describeInstance(row: ListRow): string {
  if (row.instance === null) return "-";
  const notes = [
    ...(row.lease === null ? [] : [row.lease === "none" ? "no lease" : `lease ${row.lease}`]),
    ...(row.adoptedFrom === null ? [] : [`adopted from ${row.adoptedFrom}`]),
  ];
  return notes.length === 0 ? row.instance : `${row.instance} (${notes.join("; ")})`;
}

function age(ms: number | null): string {
  return ms === null ? "-" : formatDuration(ms);
}

/** The table `list` prints: aligned columns, a placeholder's job name in the RUN ID column; a line saying none. */
export function formatListTable(rows: readonly ListRow[], namespace: string | undefined): string {
  const where = namespace === undefined ? "the kubeconfig context's namespace" : `namespace ${namespace}`;
  if (rows.length === 0) return `no runs or warm placeholders in ${where}\n`;
  const cells = rows.map((row) => [
    row.runId ?? row.job,
    row.role,
    row.phase,
    age(row.ageMs),
    row.role === "warm"
      ? "-"
      : row.heartbeatAt === null && row.heartbeatAgeMs !== null
        ? `(${age(row.heartbeatAgeMs)})`
        : age(row.heartbeatAgeMs),
    row.owner ?? "-",
    describeInstance(row),
    row.node ?? "-",
    age(row.remainingMs),
    row.podEnd ? `${row.podEnd.reason}: ${row.podEnd.message}` : "-",
  ]);
  const widths = COLUMNS.map((title, i) => Math.max(title.length, ...cells.map((line) => line[i]!.length)));
  const format = (line: readonly string[]): string =>
    line
      .map((cell, i) => (i === line.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return `${[format(COLUMNS), ...cells.map(format)].join("\n")}\n`;
}

/** What `list --json` prints. */
export function formatListJson(rows: readonly ListRow[], namespace: string | undefined): string {
  return `${JSON.stringify({ namespace: namespace ?? null, jobs: rows }, null, 2)}\n`;
}
