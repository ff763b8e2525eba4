// `gc`: removes our Jobs whose run is over or abandoned (and finished or expired placeholders), says what it spared and why.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { IPod } from "kubernetes-models/v1/Pod";
import { deleteJob } from "../executor/kubernetes/teardown.js";
import type { ClusterTarget, OpsCluster } from "../cluster/cluster.js";
import type { RetryPolicy } from "../core/retry.js";
import { isOurJob, judgeJob, readJobFacts, type GcPolicy, type JobRole } from "./classify-job.js";
import {
  describeOperatorCallFailure,
  indexPodsByJob,
  listOurJobs,
  listOurPods,
  readAnsweredNamespace,
  readPodEnd,
} from "./cluster-reads.js";
import { MANAGED_SELECTOR } from "../manifests/labels.js";
import { indexLeases, INSTANCE_LEASE_SELECTOR, type LeaseState } from "../manifests/instance-lease.js";
import { describeError } from "../core/errors.js";
import { deleteRunBudget } from "../executor/kubernetes/disruption-budget.js";

/** gc's decision on one Job. */
export interface GcDecision {
  readonly job: string;
  readonly runId: string | undefined;
  readonly role: JobRole;
  readonly action: "remove" | "spare";
  readonly reason: string;
}

/** What happened to one Job: removed (or, in a dry run, would be), spared, or its delete failed. */
export interface GcOutcome extends GcDecision {
  readonly result: "removed" | "would-remove" | "spared" | "failed";
  /** Why the delete failed. */
  readonly failure?: string;
}

/** What happened to one PodDisruptionBudget of ours whose Job is gone (an orphan: a run's budget outlives its Job only when the Job went without the garbage collector). */
export interface BudgetOutcome {
  readonly budget: string;
  readonly result: "removed" | "would-remove" | "failed";
  readonly failure?: string;
}

export interface GcReport {
  readonly namespace: string | undefined;
  readonly outcomes: readonly GcOutcome[];
  /** The orphaned budgets; absent when they could not be listed (`budgetsUnread` says why). */
  readonly budgets?: readonly BudgetOutcome[];
  readonly budgetsUnread?: string;
}

/** Decides for every Job of ours, oldest first, saying why a finished run's pod ended when `pods` tell: pure. */
export function planGc(
  jobs: readonly IJob[],
  now: number,
  policy: GcPolicy,
  pods: readonly IPod[] = [],
  leases?: ReadonlyMap<string, LeaseState>,
): GcDecision[] {
  const podOf = indexPodsByJob(pods);
  return jobs
    .filter(isOurJob)
    .map(readJobFacts)
    .sort((a, b) => (a.createdAt ?? 0) - (b.createdAt ?? 0) || a.name.localeCompare(b.name))
    .map((facts) => {
      const verdict = judgeJob(facts, now, policy, leases);
      const end = facts.finished ? readPodEnd(podOf.get(facts.name)) : undefined;
      return {
        job: facts.name,
        runId: facts.runId,
        role: facts.role,
        ...verdict,
        ...(end ? { reason: `${verdict.reason}; its pod ended: ${end.reason}: ${end.message}` } : {}),
      };
    });
}

export interface GcOptions {
  readonly policy: GcPolicy;
  readonly dryRun: boolean;
  readonly deleteRetry: RetryPolicy;
  readonly now?: () => number;
}

/**
 * Lists our Jobs, decides, and deletes those to remove with background propagation (their pods go too), one by one.
 * Throws InfraError when the Jobs cannot be listed; a delete that fails is reported in its outcome.
 */
export async function runGc(cluster: OpsCluster, target: ClusterTarget, options: GcOptions): Promise<GcReport> {
  // The budgets are listed before the Jobs: a run creates its budget after its Job, so every budget seen has its
  // Job in the list that follows, and a live run's budget is never taken for an orphan.
  const budgets = await listOurBudgets(cluster, target);
  // The pods only say why a finished run's pod ended: a refused or failed read of them costs gc nothing else.
  // The Leases are listed before the Jobs too: a Lease seen live keeps its instance's runs, whatever their heartbeat.
  // A credential that may not read them leaves gc to the heartbeats, as before there were Leases.
  const leases = await cluster.listLeases(target.namespace, INSTANCE_LEASE_SELECTOR).catch(() => undefined);
  const [jobs, pods] = await Promise.all([listOurJobs(cluster, target), listOurPods(cluster, target).catch(() => [])]);
  const now = (options.now ?? Date.now)();
  const decisions = planGc(jobs, now, options.policy, pods, leases && indexLeases(leases, now));
  const outcomes: GcOutcome[] = [];
  for (const decision of decisions) {
    if (decision.action === "spare") outcomes.push({ ...decision, result: "spared" });
    else if (options.dryRun) outcomes.push({ ...decision, result: "would-remove" });
    else {
      const deleted = await deleteJob(cluster, target.namespace, decision.job, options.deleteRetry);
      outcomes.push(
        deleted.deleted
          ? { ...decision, result: "removed" }
          : { ...decision, result: "failed", failure: deleted.detail },
      );
    }
  }
  const jobNames = new Set(jobs.map((job) => job.metadata?.name));
  const orphans = budgets.ok ? budgets.names.filter((name) => !jobNames.has(name)) : [];
  const budgetOutcomes: BudgetOutcome[] = [];
  for (const budget of orphans) {
    if (options.dryRun) budgetOutcomes.push({ budget, result: "would-remove" });
    else {
      const deleted = await deleteRunBudget(cluster, target.namespace, budget, options.deleteRetry);
      budgetOutcomes.push(
        deleted.ok ? { budget, result: "removed" } : { budget, result: "failed", failure: deleted.detail },
      );
    }
  }
  return {
    namespace: readAnsweredNamespace(target, jobs),
    outcomes,
    ...(budgets.ok ? { budgets: budgetOutcomes } : { budgetsUnread: budgets.why }),
  };
}

/** The names of our PodDisruptionBudgets (by the managed-by label), or why they could not be listed: gc goes on without them. */
async function listOurBudgets(
  cluster: OpsCluster,
  target: ClusterTarget,
): Promise<{ ok: true; names: string[] } | { ok: false; why: string }> {
  try {
    const budgets = await cluster.listDisruptionBudgets(target.namespace, MANAGED_SELECTOR);
    return { ok: true, names: budgets.flatMap((budget) => (budget.metadata?.name ? [budget.metadata.name] : [])) };
  } catch (error) {
    return { ok: false, why: describeError(describeOperatorCallFailure("listing the PodDisruptionBudgets", error)) };
  }
}

const RESULT_WORDS: Record<GcOutcome["result"], string> = {
  removed: "removed",
  "would-remove": "would remove",
  spared: "spared",
  failed: "FAILED to remove",
};

/** One line per Job (what, which, why), then a summary line. */
export function formatGcReport(report: GcReport): string {
  const where = report.namespace === undefined ? "the kubeconfig context's namespace" : `namespace ${report.namespace}`;
  const width = Math.max(0, ...report.outcomes.map((o) => RESULT_WORDS[o.result].length));
  const lines = report.outcomes.map((o) => {
    const what = o.role === "warm" ? `warm placeholder ${o.job}` : `run ${o.runId ?? "?"} (Job ${o.job})`;
    return `${RESULT_WORDS[o.result].padEnd(width)}  ${what}: ${o.failure ?? o.reason}`;
  });
  const budgetWidth = Math.max(width, ...(report.budgets ?? []).map((b) => RESULT_WORDS[b.result].length));
  for (const b of report.budgets ?? [])
    lines.push(
      `${RESULT_WORDS[b.result].padEnd(budgetWidth)}  PodDisruptionBudget ${b.budget}: ${b.failure ?? "its Job is gone (orphaned)"}`,
    );
  if (report.budgetsUnread)
    lines.push(`warning: ${report.budgetsUnread}; orphaned PodDisruptionBudgets were not looked for`);
  const count = (result: GcOutcome["result"]): number => report.outcomes.filter((o) => o.result === result).length;
  const summary = [
    `${count("removed")} removed`,
    ...(count("would-remove") > 0 ? [`${count("would-remove")} to remove (dry run)`] : []),
    `${count("spared")} spared`,
    ...(count("failed") > 0 ? [`${count("failed")} failed`] : []),
  ].join(", ");
  return `${[...lines, `gc in ${where}: ${summary}`].join("\n")}\n`;
}
