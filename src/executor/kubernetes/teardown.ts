// Deletes the run's Job (background propagation), retrying transient failures; already gone is fine.
import type { Namespace, RunCluster } from "../../cluster/cluster.js";
import { ForbiddenError, UnauthorizedError, isRetryable } from "../../cluster/errors.js";
import { describeError, type InfraReason } from "../../core/errors.js";
import { retry, type RetryPolicy } from "../../core/retry.js";

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
export async function deleteJob(
  cluster: Pick<RunCluster, "deleteJob">,
  namespace: Namespace,
  jobName: string,
  policy: RetryPolicy,
): Promise<DeleteOutcome> {
  let refused: InfraReason | undefined;
  try {
    return await retry(policy, { giveUp: (reasons) => new Error(reasons.at(-1)) }, async () => {
      try {
        const deleted = await cluster.deleteJob(namespace, jobName);
        return {
          done: true,
          value:
            deleted === "deleted"
              ? { deleted: true, detail: `deleted Job ${jobName}` }
              : { deleted: true, detail: `Job ${jobName} was already gone` },
        };
      } catch (error) {
        if (error instanceof ForbiddenError) refused = "forbidden";
        if (error instanceof UnauthorizedError) refused = "unauthorized";
        if (isRetryable(error)) return { done: false, reason: describeError(error) };
        throw error;
      }
    });
  } catch (error) {
    return {
      deleted: false,
      detail: `could not delete Job ${jobName}: ${describeError(error)}`,
      ...(refused ? { reason: refused } : {}),
    };
  }
}
