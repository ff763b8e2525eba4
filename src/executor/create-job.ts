// Creates the run's Job, retrying transient API failures and telling our own Job apart from a stranger's.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import { CancelledError, InfraError, InputError, type InfraReason } from "../errors.js";
import { buildCreateArgs, buildGetJobArgs } from "../cluster/kubectl/kubectl-args.js";
import { classifyKubectlFailure, findPermissionError, summarizeStderr } from "../cluster/kubectl/kubectl-errors.js";
import { CREATE_TOKEN_ANNOTATION } from "../k8s/labels.js";
import { retry } from "../util/retry.js";
import type { ExecutorContext } from "./context.js";

/** Whether the Job in the cluster is ours: drives what teardown may delete. */
export type JobOwnership = "none" | "ours" | "unknown";

/**
 * Creates the Job and resolves with the namespace it was created in, as kubectl reports it (the context's when the
 * target leaves it to kubectl). `onOwnership` is told as soon as the Job may exist, so a cancel mid-create still
 * tears it down. Throws InfraError (create-failed, cluster-unreachable, forbidden, unauthorized) when it cannot,
 * InputError when kubectl cannot use the kubeconfig.
 */
export async function createJob(ctx: ExecutorContext, manifest: IJob, onOwnership: (ownership: JobOwnership) => void): Promise<string> {
  const { target, jobName } = ctx.settings;
  const token = manifest.metadata?.annotations?.[CREATE_TOKEN_ANNOTATION] ?? "";
  const body = JSON.stringify(manifest);
  const where = target.namespace === undefined ? "the kubeconfig context's namespace" : `namespace ${target.namespace}`;
  return retry(
    ctx.timings.createRetry,
    {
      signal: ctx.signal,
      onRetry: (attempt, reason, delayMs) => ctx.emit({ kind: "notice", level: "warning", message: `creating the Job failed (attempt ${attempt}): ${reason}; retrying in ${delayMs} ms` }),
      giveUp: (reasons) => new InfraError(reasons.every((r) => r.startsWith("unreachable")) ? "cluster-unreachable" : "create-failed", `could not create Job ${jobName}: ${reasons.at(-1)}`),
    },
    async (attempt) => {
      onOwnership("unknown");
      const result = await ctx.kubectl.run(buildCreateArgs(target), { stdin: body, signal: ctx.signal });
      // Killed by the cancel: the API server may have created the Job all the same, so it stays "unknown" and
      // teardown checks its create token before deleting.
      if (ctx.signal.aborted) throw new CancelledError();
      if (result.exitCode === 0) {
        onOwnership("ours");
        return { done: true, value: readJobNamespace(result.stdout, target.namespace) };
      }
      const kind = classifyKubectlFailure(result.stderr);
      const said = summarizeStderr(result.stderr);
      if (kind === "kubeconfig") {
        onOwnership("none");
        throw new InputError(`kubectl cannot use the kubeconfig: ${said}`);
      }
      const denied = findPermissionError(result.stderr, `could not create Job ${jobName}`);
      if (denied) {
        // A refused first attempt created nothing; a later one may follow an attempt that reached the server.
        onOwnership(attempt === 1 ? "none" : "unknown");
        throw denied;
      }
      if (kind === "already-exists") {
        // A first create cannot have made the Job it collides with; a retried one may have (its earlier attempt
        // reached the server but kubectl did not see the answer).
        const found = attempt > 1 ? await readOurJob(ctx, token) : { kind: "theirs" as const };
        if (found.kind === "ours") {
          onOwnership("ours");
          return { done: true, value: readJobNamespace(found.json, target.namespace) };
        }
        if (found.kind === "unreadable") {
          onOwnership("unknown"); // teardown reads it again and deletes it only if the token is ours
          throw new InfraError("create-failed", `a Job named ${jobName} already exists in ${where} and could not be read back to tell whether an earlier attempt of this run created it: ${found.reason}`);
        }
        onOwnership("none");
        throw new InfraError("create-failed", `a Job named ${jobName} already exists in ${where}; another run with id "${ctx.settings.runId}" is running or was kept: choose another --run-id or delete it`);
      }
      if (kind === "transient" || kind === "unreachable") return { done: false, reason: `${kind}: ${said}` };
      onOwnership("none");
      throw new InfraError("create-failed", `could not create Job ${jobName}: ${said}`);
    },
  );
}

/** Whose the Job of the run's name is: ours (with its JSON), another run's (or none), or not known. */
export type FoundJob =
  | { readonly kind: "ours"; readonly json: string }
  | { readonly kind: "theirs" }
  /** `refused`: the read was refused (403, 401), not merely failed. */
  | { readonly kind: "unreadable"; readonly reason: string; readonly refused?: InfraReason };

/** Reads the Job back and compares its create token with ours. */
export async function readOurJob(ctx: ExecutorContext, token: string): Promise<FoundJob> {
  const result = await ctx.kubectl.run(buildGetJobArgs(ctx.settings.target, ctx.settings.jobName), { signal: ctx.signal });
  if (result.exitCode !== 0) {
    const kind = classifyKubectlFailure(result.stderr);
    if (kind === "not-found") return { kind: "theirs" };
    return { kind: "unreadable", reason: summarizeStderr(result.stderr), ...(kind === "forbidden" || kind === "unauthorized" ? { refused: kind } : {}) };
  }
  let job: IJob;
  try {
    job = JSON.parse(result.stdout) as IJob;
  } catch {
    return { kind: "unreadable", reason: `kubectl printed no JSON: ${result.stdout.slice(0, 200)}` };
  }
  return job.metadata?.annotations?.[CREATE_TOKEN_ANNOTATION] === token ? { kind: "ours", json: result.stdout } : { kind: "theirs" };
}

/** Reads the Job back and compares its create token with ours; a Job that cannot be read is not known to be ours. */
export async function isOurJob(ctx: ExecutorContext, token: string): Promise<boolean> {
  return (await readOurJob(ctx, token)).kind === "ours";
}

const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The namespace of the Job kubectl printed (JSON); the pinned one when kubectl's answer does not say. */
function readJobNamespace(json: string, pinned: string | undefined): string {
  let namespace: unknown;
  try {
    namespace = (JSON.parse(json) as IJob).metadata?.namespace;
  } catch {
    namespace = undefined;
  }
  if (typeof namespace === "string" && NAMESPACE.test(namespace)) return namespace;
  if (pinned !== undefined) return pinned;
  throw new InfraError("create-failed", `kubectl created the Job but its answer names no namespace: ${json.slice(0, 200)}`);
}
