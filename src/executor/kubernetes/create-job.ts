// Creates the run's Job, retrying transient API failures and telling our own Job apart from a stranger's.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import {
  AlreadyExistsError,
  ClusterError,
  ConfigError,
  ForbiddenError,
  NotFoundError,
  UnauthorizedError,
  UnavailableError,
  UnreadableAnswerError,
  isRetryable,
} from "../../cluster/errors.js";
import { describeRefusal } from "../../cluster/refusal.js";
import { CancelledError, InfraError, InputError, describeError, type InfraReason } from "../../core/errors.js";
import { CREATE_TOKEN_ANNOTATION } from "../../manifests/labels.js";
import { describeSpent, retry } from "../../core/retry.js";
import type { ExecutorContext } from "./context.js";

/** Whether the Job in the cluster is ours: drives what teardown may delete. */
export type JobOwnership = "none" | "ours" | "unknown";

/**
 * Creates the Job and resolves with the namespace it was created in, as the cluster answered (the context's when the
 * target leaves it to kubectl). `onOwnership` is told as soon as the Job may exist, so a cancel mid-create still
 * tears it down. Throws InfraError (create-failed, cluster-unreachable, forbidden, unauthorized) when it cannot,
 * InputError when the transport cannot use the kubeconfig. `onCreated` gets the Job as the cluster answered it (its
 * uid, for the owner reference of the run's disruption budget).
 */
export async function createJob(
  ctx: ExecutorContext,
  manifest: IJob,
  onOwnership: (ownership: JobOwnership) => void,
  onCreated?: (job: IJob) => void,
): Promise<string> {
  const { target, jobName } = ctx.settings;
  const token = manifest.metadata?.annotations?.[CREATE_TOKEN_ANNOTATION] ?? "";
  const where = target.namespace === undefined ? "the kubeconfig context's namespace" : `namespace ${target.namespace}`;
  return retry(
    ctx.timings.createRetry,
    {
      signal: ctx.signal,
      onRetry: (attempt, reason, delayMs) =>
        ctx.emit({
          kind: "notice",
          level: "warning",
          message: `creating the Job failed (attempt ${attempt}): ${reason}; retrying in ${delayMs} ms`,
        }),
      giveUp: (reasons, spent) =>
        new InfraError(
          reasons.every((r) => r.startsWith("unreachable")) ? "cluster-unreachable" : "create-failed",
          `could not create Job ${jobName} (${describeSpent(spent)}): ${reasons.at(-1)}`,
        ),
    },
    async (attempt) => {
      onOwnership("unknown");
      let created: IJob;
      try {
        created = await ctx.cluster.createJob(target.namespaceFromContext ? undefined : target.namespace, manifest, {
          signal: ctx.signal,
        });
      } catch (error) {
        // Stopped by the cancel: the API server may have created the Job all the same, so it stays "unknown" and
        // teardown checks its create token before deleting.
        if (ctx.signal.aborted) throw new CancelledError();
        if (!(error instanceof ClusterError)) throw error;
        if (error instanceof UnreadableAnswerError) {
          onOwnership("ours"); // created: teardown deletes it
          throw new InfraError("create-failed", error.message);
        }
        if (error instanceof ConfigError) {
          onOwnership("none");
          throw new InputError(`kubectl cannot use the kubeconfig: ${error.message}`);
        }
        const denied = describeRefusal(error, `could not create Job ${jobName}`);
        if (denied) {
          // A refused first attempt created nothing; a later one may follow an attempt that reached the server.
          onOwnership(attempt === 1 ? "none" : "unknown");
          throw denied;
        }
        if (error instanceof AlreadyExistsError) {
          // A first create cannot have made the Job it collides with; a retried one may have (its earlier attempt
          // reached the server but the transport did not see the answer).
          const found = attempt > 1 ? await readOurJob(ctx, token) : { kind: "theirs" as const };
          if (found.kind === "ours") {
            onOwnership("ours");
            onCreated?.(found.job);
            return { done: true, value: readJobNamespace(found.job, target.namespace) };
          }
          if (found.kind === "unreadable") {
            onOwnership("unknown"); // teardown reads it again and deletes it only if the token is ours
            throw new InfraError(
              "create-failed",
              `a Job named ${jobName} already exists in ${where} and could not be read back to tell whether an earlier attempt of this run created it: ${found.reason}`,
            );
          }
          onOwnership("none");
          throw new InfraError(
            "create-failed",
            `a Job named ${jobName} already exists in ${where}; another run with id "${ctx.settings.runId}" is running or was kept: choose another --run-id or delete it`,
          );
        }
        if (isRetryable(error))
          return {
            done: false,
            reason: `${error instanceof UnavailableError && error.reason === "unreachable" ? "unreachable" : "transient"}: ${error.message}`,
          };
        onOwnership("none");
        throw new InfraError("create-failed", `could not create Job ${jobName}: ${error.message}`);
      }
      if (ctx.signal.aborted) throw new CancelledError();
      onOwnership("ours");
      onCreated?.(created);
      return { done: true, value: readJobNamespace(created, target.namespace) };
    },
  );
}

/** Whose the Job of the run's name is: ours (as read), another run's (or none), or not known. */
export type FoundJob =
  | { readonly kind: "ours"; readonly job: IJob }
  | { readonly kind: "theirs" }
  /** `refused`: the read was refused (403, 401), not merely failed. */
  | { readonly kind: "unreadable"; readonly reason: string; readonly refused?: InfraReason };

/** Reads the Job back and compares its create token with ours. */
export async function readOurJob(ctx: ExecutorContext, token: string): Promise<FoundJob> {
  let job: IJob;
  try {
    job = await ctx.cluster.getJob(ctx.settings.target.namespace, ctx.settings.jobName, { signal: ctx.signal });
  } catch (error) {
    if (error instanceof NotFoundError) return { kind: "theirs" };
    const refused =
      error instanceof ForbiddenError ? "forbidden" : error instanceof UnauthorizedError ? "unauthorized" : undefined;
    return { kind: "unreadable", reason: describeError(error), ...(refused ? { refused } : {}) };
  }
  return job.metadata?.annotations?.[CREATE_TOKEN_ANNOTATION] === token ? { kind: "ours", job } : { kind: "theirs" };
}

/** Reads the Job back and compares its create token with ours; a Job that cannot be read is not known to be ours. */
export async function isOurCreatedJob(ctx: ExecutorContext, token: string): Promise<boolean> {
  return (await readOurJob(ctx, token)).kind === "ours";
}

const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The namespace of the Job as the cluster answered it; the pinned one when the answer does not say. */
function readJobNamespace(job: IJob, pinned: string | undefined): string {
  const namespace = job.metadata?.namespace;
  if (typeof namespace === "string" && NAMESPACE.test(namespace)) return namespace;
  if (pinned !== undefined) return pinned;
  throw new InfraError(
    "create-failed",
    `the Job was created but the answer names no namespace: ${JSON.stringify(job).slice(0, 200)}`,
  );
}
