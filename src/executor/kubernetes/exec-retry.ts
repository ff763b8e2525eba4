// Retries an exec while the node refuses exec upgrades (fresh from scale-up); any other failure is final.
import { describeExecSaid, type ExecEnd } from "../../cluster/exec.js";
import { UnavailableError } from "../../cluster/errors.js";
import { describeRefusal } from "../../cluster/refusal.js";
import { CancelledError, InfraError, type InfraReason } from "../../core/errors.js";
import { describeSpent, retry, type AttemptOutcome } from "../../core/retry.js";
import type { ExecutorContext } from "./context.js";
import type { RunPod } from "../executor.js";
import { assertPodAlive, assertPodAliveAfterLag } from "./pod-alive.js";

/** An exec attempt either produced its value or ended in a way to be judged. */
export type ExecAttempt<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly end: ExecEnd };

/** Whether an exec could not be set up and nothing ran in the pod (a fresh node, a kubelet not ready): worth another try. */
export function isExecNotReady(end: ExecEnd): boolean {
  return end.kind === "failed" && end.error instanceof UnavailableError && end.error.reason === "exec-not-ready";
}

/**
 * Runs `attempt` until it succeeds; retries only an exec that was not ready (UnavailableError `exec-not-ready`). Any
 * other failure, an end or an InfraError thrown by `attempt`, is final (a refusal, 403 or 401, at once); when the pod
 * is gone by then (evicted mid-transfer), the error says so (pod-lost) instead of blaming the exec.
 */
export async function withExecRetry<T>(
  ctx: ExecutorContext,
  pod: RunPod,
  what: string,
  failure: InfraReason,
  attempt: () => Promise<ExecAttempt<T>>,
): Promise<T> {
  return retry(
    { ...ctx.timings.execReadyRetry, budgetMs: ctx.timings.execReadyBudgetMs },
    {
      signal: ctx.signal,
      onRetry: (n, reason, delayMs) =>
        ctx.emit({
          kind: "notice",
          level: "warning",
          message: `${what}: exec not ready (attempt ${n}): ${reason}; retrying in ${delayMs} ms`,
        }),
      giveUp: (reasons, spent) =>
        new InfraError(
          "exec-failed",
          `${what}: exec kept failing (${describeSpent(spent)}, budget ${Math.round(ctx.timings.execReadyBudgetMs / 1000)}s): ${reasons.at(-1)}`,
        ),
    },
    async (): Promise<AttemptOutcome<T>> => {
      let result: ExecAttempt<T>;
      try {
        result = await attempt();
      } catch (error) {
        if (ctx.signal.aborted) throw new CancelledError(); // the cancel ended the exec: that is why it failed
        if (error instanceof InfraError) await assertPodAlive(ctx, pod);
        throw error;
      }
      if (result.ok) return { done: true, value: result.value };
      if (ctx.signal.aborted) throw new CancelledError();
      const { end } = result;
      const denied = end.kind === "failed" ? describeRefusal(end.error, what) : undefined;
      if (denied) throw denied;
      const said = describeExecSaid(end);
      if (isExecNotReady(end)) return { done: false, reason: said };
      await assertPodAliveAfterLag(ctx, pod);
      throw new InfraError(failure, `${what} failed (${end.how}): ${said}`);
    },
  );
}
