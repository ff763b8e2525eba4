// Tells a lost pod (evicted, deleted, failed) from a failed exec into a live one.
import { setTimeout as sleep } from "node:timers/promises";
import { CancelledError, InfraError } from "../../core/errors.js";
import { describePodEnd } from "../../manifests/pod-state.js";
import type { ExecutorContext } from "./context.js";
import type { RunPod } from "../executor.js";
import { readRunPod } from "./wait-for-pod.js";

/** After an exec failed or its stream dropped: is the pod still there? Throws pod-lost when it is not. */
export async function assertPodAlive(ctx: ExecutorContext, pod: RunPod): Promise<void> {
  const read = await readRunPod(ctx);
  if ("failure" in read) return; // cannot tell: the caller goes on with its own error or reconnect
  const current = read.pod;
  if (!current || current.metadata?.name !== pod.name) throw new InfraError("pod-lost", `pod ${pod.name} is gone`);
  const phase = current.status?.phase;
  if (current.metadata?.deletionTimestamp && phase !== "Failed" && phase !== "Succeeded") {
    // A pod being deleted still says Running until its containers stop: the deletion is the news.
    throw new InfraError(
      "pod-lost",
      `pod ${pod.name} was lost: ${current.status?.reason ?? "Deleted"}${current.status?.message ? `: ${current.status.message}` : ""}`,
    );
  }
  if (phase === "Failed" || phase === "Succeeded" || phase === "Unknown") {
    const end = describePodEnd(current);
    throw new InfraError("pod-lost", `pod ${pod.name} was lost: ${end.reason}${end.message ? `: ${end.message}` : ""}`);
  }
}

/**
 * Before an exec's failure is reported as the exec's: looks at the pod until ctx.timings.podEndLagMs has passed, each
 * second, and throws pod-lost once its status says it ended. Under load an evicted pod's exec failed ("no such
 * container") while its status still said Running, and the eviction was reported as a failed upload.
 */
export async function assertPodAliveAfterLag(ctx: ExecutorContext, pod: RunPod): Promise<void> {
  const until = Date.now() + ctx.timings.podEndLagMs;
  await assertPodAlive(ctx, pod);
  while (Date.now() < until) {
    try {
      await sleep(Math.min(1000, until - Date.now()), undefined, { signal: ctx.signal });
    } catch {
      throw new CancelledError();
    }
    await assertPodAlive(ctx, pod);
  }
}
