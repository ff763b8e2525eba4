// `gc`: removes our Jobs whose run is over or abandoned (and finished or expired placeholders), says what it spared and why.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { IPod } from "kubernetes-models/v1/Pod";
import { deleteJob } from "../executor/teardown.js";
import type { Cluster, ClusterTarget } from "../cluster/cluster.js";
import type { RetryPolicy } from "../util/retry.js";
import { isOurJob, judgeJob, readJobFacts, type GcPolicy, type JobRole } from "./classify-job.js";
import { indexPodsByJob, listOurJobs, listOurPods, readAnsweredNamespace, readPodEnd } from "./cluster-reads.js";

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

export interface GcReport {
  readonly namespace: string | undefined;
  readonly outcomes: readonly GcOutcome[];
}

/** Decides for every Job of ours, oldest first, saying why a finished run's pod ended when `pods` tell: pure. */
export function planGc(jobs: readonly IJob[], now: number, policy: GcPolicy, pods: readonly IPod[] = []): GcDecision[] {
  const podOf = indexPodsByJob(pods);
  return jobs
    .filter(isOurJob)
    .map(readJobFacts)
    .sort((a, b) => (a.createdAt ?? 0) - (b.createdAt ?? 0) || a.name.localeCompare(b.name))
    .map((facts) => {
      const verdict = judgeJob(facts, now, policy);
      const end = facts.finished ? readPodEnd(podOf.get(facts.name)) : undefined;
      return { job: facts.name, runId: facts.runId, role: facts.role, ...verdict, ...(end ? { reason: `${verdict.reason}; its pod ended: ${end.reason}: ${end.message}` } : {}) };
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
export async function runGc(cluster: Cluster, target: ClusterTarget, options: GcOptions): Promise<GcReport> {
  // The pods only say why a finished run's pod ended: a refused or failed read of them costs gc nothing else.
  const [jobs, pods] = await Promise.all([listOurJobs(cluster, target), listOurPods(cluster, target).catch(() => [])]);
  const decisions = planGc(jobs, (options.now ?? Date.now)(), options.policy, pods);
  const outcomes: GcOutcome[] = [];
  for (const decision of decisions) {
    if (decision.action === "spare") outcomes.push({ ...decision, result: "spared" });
    else if (options.dryRun) outcomes.push({ ...decision, result: "would-remove" });
    else {
      const deleted = await deleteJob(cluster, target.namespace, decision.job, options.deleteRetry);
      outcomes.push(deleted.deleted ? { ...decision, result: "removed" } : { ...decision, result: "failed", failure: deleted.detail });
    }
  }
  return { namespace: readAnsweredNamespace(target, jobs), outcomes };
}

const RESULT_WORDS: Record<GcOutcome["result"], string> = { removed: "removed", "would-remove": "would remove", spared: "spared", failed: "FAILED to remove" };

/** One line per Job (what, which, why), then a summary line. */
export function formatGcReport(report: GcReport): string {
  const where = report.namespace === undefined ? "the kubeconfig context's namespace" : `namespace ${report.namespace}`;
  const width = Math.max(0, ...report.outcomes.map((o) => RESULT_WORDS[o.result].length));
  const lines = report.outcomes.map((o) => {
    const what = o.role === "warm" ? `warm placeholder ${o.job}` : `run ${o.runId ?? "?"} (Job ${o.job})`;
    return `${RESULT_WORDS[o.result].padEnd(width)}  ${what}: ${o.failure ?? o.reason}`;
  });
  const count = (result: GcOutcome["result"]): number => report.outcomes.filter((o) => o.result === result).length;
  const summary = [
    `${count("removed")} removed`,
    ...(count("would-remove") > 0 ? [`${count("would-remove")} to remove (dry run)`] : []),
    `${count("spared")} spared`,
    ...(count("failed") > 0 ? [`${count("failed")} failed`] : []),
  ].join(", ");
  return `${[...lines, `gc in ${where}: ${summary}`].join("\n")}\n`;
}
