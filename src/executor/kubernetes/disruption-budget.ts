// Creates the run's PodDisruptionBudget once the Job exists and deletes it at teardown, retrying transient failures.
import type { Namespace, RunCluster } from "../../cluster/cluster.js";
import { AlreadyExistsError, ClusterError, isRetryable } from "../../cluster/errors.js";
import { describeRefusal } from "../../cluster/refusal.js";
import { CancelledError, InfraError, describeError } from "../../core/errors.js";
import { buildDisruptionBudget } from "../../manifests/disruption-budget.js";
import { describeSpent, retry, type RetryPolicy } from "../../core/retry.js";
import type { ExecutorContext } from "./context.js";

/**
 * Creates the budget of the run's pod in the Job's namespace (pinned in `ctx`), owned by the Job of `jobUid`, and
 * resolves with a sentence for the create phase. One that exists already is fine (a retried create's, or an orphan of
 * the same run id: it selects the same pod). Throws InfraError `forbidden` or `unauthorized` (naming the permission),
 * `create-failed` when it cannot, CancelledError when the run was cancelled: the caller's teardown deletes the Job.
 */
export async function createRunBudget(ctx: ExecutorContext, jobUid: string | undefined): Promise<string> {
  const { target, jobName, runId, runIdLabel } = ctx.settings;
  const budget = buildDisruptionBudget({
    jobName,
    ...(jobUid ? { jobUid } : {}),
    ...(target.namespace !== undefined ? { namespace: target.namespace } : {}),
    runId,
    runIdLabel,
  });
  return retry(
    ctx.timings.createRetry,
    {
      signal: ctx.signal,
      onRetry: (attempt, reason, delayMs) =>
        ctx.emit({
          kind: "notice",
          level: "warning",
          message: `creating the PodDisruptionBudget failed (attempt ${attempt}): ${reason}; retrying in ${delayMs} ms`,
        }),
      giveUp: (reasons, spent) =>
        new InfraError(
          "create-failed",
          `could not create PodDisruptionBudget ${jobName} (${describeSpent(spent)}): ${reasons.at(-1)}`,
        ),
    },
    async () => {
      try {
        await ctx.cluster.createDisruptionBudget(target.namespace, budget, { signal: ctx.signal });
        return { done: true, value: `PodDisruptionBudget ${jobName} (maxUnavailable 0) guards the pod against drains` };
      } catch (error) {
        if (ctx.signal.aborted) throw new CancelledError();
        if (error instanceof AlreadyExistsError)
          return {
            done: true,
            value: `PodDisruptionBudget ${jobName} (maxUnavailable 0) was there already and guards the pod against drains`,
          };
        const denied = describeRefusal(
          error,
          `could not create PodDisruptionBudget ${jobName} (the run needs create on poddisruptionbudgets.policy; pod.disruptionBudget: false runs without one)`,
        );
        if (denied) throw denied;
        if (error instanceof ClusterError && isRetryable(error)) return { done: false, reason: describeError(error) };
        throw new InfraError(
          "create-failed",
          `could not create PodDisruptionBudget ${jobName}: ${describeError(error)}`,
          { cause: error },
        );
      }
    },
  );
}

/**
 * Deletes the run's budget, retrying transient failures within `policy`; resolves with a sentence, never rejects. A
 * budget left behind is no leak: its owner reference takes it with the Job, and gc removes one whose Job is gone.
 */
export async function deleteRunBudget(
  cluster: Pick<RunCluster, "deleteDisruptionBudget">,
  namespace: Namespace,
  name: string,
  policy: RetryPolicy,
): Promise<{ readonly ok: boolean; readonly detail: string }> {
  try {
    return await retry(policy, { giveUp: (reasons) => new Error(reasons.at(-1)) }, async () => {
      try {
        const deleted = await cluster.deleteDisruptionBudget(namespace, name);
        return {
          done: true,
          value: {
            ok: true,
            detail:
              deleted === "deleted"
                ? `deleted PodDisruptionBudget ${name}`
                : `PodDisruptionBudget ${name} was already gone`,
          },
        };
      } catch (error) {
        if (isRetryable(error)) return { done: false, reason: describeError(error) };
        throw error;
      }
    });
  } catch (error) {
    return {
      ok: false,
      detail: `could not delete PodDisruptionBudget ${name} (${describeError(error)}): it goes with the Job (owner reference), or with gc`,
    };
  }
}
