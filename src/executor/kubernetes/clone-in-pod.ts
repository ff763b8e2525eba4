// Clones a git checkout inside the run's pod when its image has git: a probe before the upload, the clone into /work after it.
import { InfraError } from "../../core/errors.js";
import { runExec } from "../../cluster/run-exec.js";
import {
  buildGitCloneCommand,
  buildGitProbeCommand,
  GIT_FOUND_TAG,
  readCloneReply,
  type PodCloneSpec,
} from "../../pod/git-clone-script.js";
import { buildPodExec, type ExecutorContext } from "./context.js";
import type { RunPod } from "../executor.js";
import { withExecRetry } from "./exec-retry.js";
import { tailText } from "../../core/tail-text.js";

/** Whether the pod's image has git on its PATH (one short exec); an exec that fails is an InfraError as any. */
export async function probeGit(ctx: ExecutorContext, pod: RunPod): Promise<boolean> {
  return withExecRetry(ctx, pod, "git probe", "exec-failed", async () => {
    const { end, stdout } = await runExec(ctx.cluster, buildPodExec(ctx, pod.name, buildGitProbeCommand()));
    if (end.kind !== "exit" || end.code !== 0) return { ok: false, end };
    return { ok: true, value: stdout.split("\n").includes(GIT_FOUND_TAG) };
  });
}

/**
 * Clones `spec` into /work (which holds only what the upload put there: an empty checkout). Resolves with the HEAD
 * checked out; a git command that failed (an unreachable URL, a commit the server does not have) is InfraError
 * `checkout-failed` naming the git step and its message (its end, bounded by tailText); an exec that failed otherwise is `exec-failed`.
 */
export async function cloneInPod(ctx: ExecutorContext, pod: RunPod, spec: PodCloneSpec): Promise<string> {
  return withExecRetry(ctx, pod, "clone", "exec-failed", async () => {
    const { end, stdout } = await runExec(ctx.cluster, buildPodExec(ctx, pod.name, buildGitCloneCommand(spec)));
    const reply = readCloneReply(stdout);
    if (end.kind === "exit" && end.code === 0 && reply?.ok) return { ok: true, value: reply.head };
    if (end.kind === "exit" && reply && !reply.ok) {
      const words = tailText(end.stderr);
      throw new InfraError(
        "checkout-failed",
        `git ${reply.step} failed in the pod (exit ${reply.code})${words ? `: ${words}` : ""}`,
      );
    }
    return { ok: false, end };
  });
}
