// Deletes the run's Job (background propagation), retrying transient failures; already gone is fine.
import { formatCommand } from "../events/format-event.js";
import { buildDeleteJobArgs } from "../cluster/kubectl/kubectl-args.js";
import type { InfraReason } from "../errors.js";
import { classifyKubectlFailure, summarizeStderr } from "../cluster/kubectl/kubectl-errors.js";
import type { Kubectl } from "../cluster/kubectl/kubectl.js";
import type { ClusterTarget } from "../cluster/kubectl/kubectl-args.js";
import { retry, type RetryPolicy } from "../util/retry.js";

/** The command that deletes the Job, shell-quoted and naming the kubectl the run was given: for the operator to run. */
export function formatDeleteJobCommand(kubectlBinary: string, target: ClusterTarget, jobName: string): string {
  return formatCommand(kubectlBinary, buildDeleteJobArgs(target, jobName));
}

/** What deleteJob did; `reason` says why a delete that failed was refused (403, 401), when it was. */
export interface DeleteOutcome {
  readonly deleted: boolean;
  readonly detail: string;
  readonly reason?: InfraReason;
}

/**
 * Deletes the Job, retrying transient failures within `policy` (the timings' deleteRetry); resolves with what
 * happened, never rejects. It takes no run signal: it must run after a cancel. A refused delete is not retried.
 */
export async function deleteJob(kubectl: Kubectl, target: ClusterTarget, jobName: string, policy: RetryPolicy): Promise<DeleteOutcome> {
  let refused: InfraReason | undefined;
  try {
    return await retry(policy, { giveUp: (reasons) => new Error(reasons.at(-1)) }, async () => {
      const result = await kubectl.run(buildDeleteJobArgs(target, jobName));
      if (result.exitCode === 0) return { done: true, value: { deleted: true, detail: `deleted Job ${jobName}` } };
      const kind = classifyKubectlFailure(result.stderr);
      if (kind === "forbidden" || kind === "unauthorized") refused = kind;
      if (kind === "not-found") return { done: true, value: { deleted: true, detail: `Job ${jobName} was already gone` } };
      if (kind === "transient" || kind === "unreachable") return { done: false, reason: summarizeStderr(result.stderr) };
      throw new Error(summarizeStderr(result.stderr));
    });
  } catch (error) {
    return { deleted: false, detail: `could not delete Job ${jobName}: ${error instanceof Error ? error.message : String(error)}`, ...(refused ? { reason: refused } : {}) };
  }
}
