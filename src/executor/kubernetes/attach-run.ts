// Finds a stopped runner's run in the cluster again: its Job, its running pod, the pod's state and the secrets it holds.
import { InfraError } from "../../core/errors.js";
import { isExecSuccess } from "../../cluster/exec.js";
import { NotFoundError } from "../../cluster/errors.js";
import { describeRefusal } from "../../cluster/refusal.js";
import { runExec } from "../../cluster/run-exec.js";
import { classifyPod } from "../../manifests/pod-state.js";
import { helperCommand } from "../../pod/helper-script.js";
import { parsePodRunState, type PodRunState } from "../../pod/pod-run-state.js";
import { parseSecretsFile } from "../../pod/secrets-payload.js";
import { buildPodExec, type ExecutorContext } from "./context.js";
import type { RunPod } from "../executor.js";
import { withExecRetry } from "./exec-retry.js";
import { readRunPod } from "./wait-for-pod.js";

/** The run lost with what was found: never a quiet success, never a run left running. */
function lost(message: string): InfraError {
  return new InfraError("runner-lost", `the runner stopped and its run could not be re-attached to: ${message}`);
}

/** Reads the run's Job; throws runner-lost when it is gone or being deleted, the refusal when the API server refuses. */
export async function findRunJob(ctx: ExecutorContext): Promise<void> {
  const { namespace } = ctx.settings.target;
  try {
    const job = await ctx.cluster.getJob(namespace, ctx.settings.jobName, { signal: ctx.signal });
    if (job.metadata?.deletionTimestamp) throw lost(`its Job ${ctx.settings.jobName} is being deleted`);
  } catch (error) {
    if (error instanceof NotFoundError) throw lost(`its Job ${ctx.settings.jobName} is gone`);
    throw describeRefusal(error, `cannot read Job ${ctx.settings.jobName}`) ?? error;
  }
}

/** The run's pod, when it runs; runner-lost saying what the pod is otherwise (absent, ended, another pod). */
export async function findRunningPod(ctx: ExecutorContext, expected: string | undefined): Promise<RunPod> {
  const read = await readRunPod(ctx);
  if ("failure" in read)
    throw new InfraError(
      read.unreachable ? "cluster-unreachable" : "api-error",
      `cannot read the run's pod: ${read.failure}`,
    );
  const state = classifyPod(read.pod, 0, Number.POSITIVE_INFINITY);
  const name = read.pod?.metadata?.name;
  if (state.kind === "absent") throw lost(`its Job ${ctx.settings.jobName} has no pod`);
  if (expected !== undefined && name !== expected)
    throw lost(`its pod ${expected} is gone (the Job's pod is now ${name})`);
  if (state.kind === "gone") throw lost(`its pod ${state.name} has ended: ${state.reason}: ${state.message}`);
  if (state.kind !== "running")
    throw lost(`its pod ${name} is not running (${state.kind}${"reason" in state && state.reason ? `: ${state.reason}` : ""})`);
  return { name: state.name, node: state.node };
}

/** `helper.sh state` in the pod. */
export async function readPodRunState(ctx: ExecutorContext, pod: RunPod): Promise<PodRunState> {
  const stdout = await withExecRetry(ctx, pod, "reading the run's state in the pod", "exec-failed", async () => {
    const { end, stdout: said } = await runExec(ctx.cluster, buildPodExec(ctx, pod.name, helperCommand.state()));
    return isExecSuccess(end) ? { ok: true, value: said } : { ok: false, end };
  });
  return parsePodRunState(stdout);
}

/**
 * The secrets the pod holds, read over the exec's stdout into memory only (the call's log line names the command,
 * never what it printed); empty when the pod holds none. A file that cannot be read back fails the re-attach: the
 * run's output could no longer be masked.
 */
export async function readPodSecrets(
  ctx: ExecutorContext,
  pod: RunPod,
): Promise<Array<{ name: string; value: string }>> {
  const stdout = await withExecRetry(ctx, pod, "reading the secrets back", "exec-failed", async () => {
    const { end, stdout: said } = await runExec(ctx.cluster, buildPodExec(ctx, pod.name, helperCommand.readSecrets()));
    if (end.kind === "exit" && end.code === 3) return { ok: true, value: undefined };
    return isExecSuccess(end) ? { ok: true, value: said } : { ok: false, end };
  });
  if (stdout === undefined) return [];
  const secrets = parseSecretsFile(stdout);
  if (secrets === undefined) throw lost("the secrets file in its pod could not be read back (its masking could not go on)");
  return secrets;
}

