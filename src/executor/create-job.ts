// Creates the run's Job, retrying transient API failures and telling our own Job apart from a stranger's.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import { InfraError } from "../errors.js";
import { buildCreateArgs, buildGetJobArgs } from "../k8s/kubectl-args.js";
import { classifyKubectlFailure, summarizeStderr } from "../k8s/kubectl-errors.js";
import { CREATE_TOKEN_ANNOTATION } from "../k8s/labels.js";
import { retry } from "../util/retry.js";
import type { ExecutorContext } from "./context.js";

/** Whether the Job in the cluster is ours: drives what teardown may delete. */
export type JobOwnership = "none" | "ours" | "unknown";

const CREATE_POLICY = { budgetMs: 60_000, maxAttempts: 5, initialDelayMs: 1000, maxDelayMs: 8000 } as const;

/**
 * Creates the Job. `onOwnership` is told as soon as the Job may exist, so a cancel mid-create still tears it down.
 * Throws InfraError (create-failed, cluster-unreachable) when it cannot.
 */
export async function createJob(ctx: ExecutorContext, manifest: IJob, onOwnership: (ownership: JobOwnership) => void): Promise<void> {
  const { target, jobName } = ctx.settings;
  const token = manifest.metadata?.annotations?.[CREATE_TOKEN_ANNOTATION] ?? "";
  const body = JSON.stringify(manifest);
  await retry(
    CREATE_POLICY,
    {
      signal: ctx.signal,
      onRetry: (attempt, reason, delayMs) => ctx.emit({ kind: "notice", level: "warning", message: `creating the Job failed (attempt ${attempt}): ${reason}; retrying in ${delayMs} ms` }),
      giveUp: (reasons) => new InfraError(reasons.every((r) => r.startsWith("unreachable")) ? "cluster-unreachable" : "create-failed", `could not create Job ${jobName}: ${reasons.at(-1)}`),
    },
    async (attempt) => {
      onOwnership("unknown");
      const result = await ctx.kubectl.run(buildCreateArgs(target), { stdin: body, signal: ctx.signal });
      if (result.exitCode === 0) {
        onOwnership("ours");
        return { done: true, value: undefined };
      }
      const kind = classifyKubectlFailure(result.stderr);
      const said = summarizeStderr(result.stderr);
      if (kind === "already-exists") {
        if (attempt > 1 && (await isOurJob(ctx, token))) {
          onOwnership("ours");
          return { done: true, value: undefined };
        }
        onOwnership("none");
        throw new InfraError("create-failed", `a Job named ${jobName} already exists in namespace ${target.namespace}; another run with id "${ctx.settings.runId}" is running or was kept: choose another --run-id or delete it`);
      }
      if (kind === "transient" || kind === "unreachable") return { done: false, reason: `${kind}: ${said}` };
      onOwnership("none");
      throw new InfraError("create-failed", `could not create Job ${jobName}: ${said}`);
    },
  );
}

/** Reads the Job back and compares its create token with ours. */
export async function isOurJob(ctx: ExecutorContext, token: string): Promise<boolean> {
  const result = await ctx.kubectl.run(buildGetJobArgs(ctx.settings.target, ctx.settings.jobName), { signal: ctx.signal });
  if (result.exitCode !== 0) return false;
  try {
    const job = JSON.parse(result.stdout) as IJob;
    return job.metadata?.annotations?.[CREATE_TOKEN_ANNOTATION] === token;
  } catch {
    return false;
  }
}
