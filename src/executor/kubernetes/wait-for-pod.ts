// Waits for the Job's pod to run, reporting Pending progress and failing fast on states that will not cure.
import type { IPod } from "kubernetes-models/v1/Pod";
import { ClusterError, UnavailableError } from "../../cluster/errors.js";
import { describeRefusal } from "../../cluster/refusal.js";
import { CancelledError, InfraError } from "../../core/errors.js";
import { formatDuration } from "../../core/duration.js";
import { buildRunSelector } from "../../manifests/labels.js";
import { classifyPod, isImagePullFailing, pickRunPod, type PodState } from "../../manifests/pod-state.js";
import {
  describePlacement,
  findAdmissionRefusal,
  isSelectorMismatch,
  type AutoscalerVerdict,
} from "../../manifests/unplaceable.js";
import type { ExecutorContext } from "./context.js";
import type { RunPod } from "../executor.js";
import { openPodEventsView, type PodEventsView } from "./pod-events-view.js";
import { openPodWatchView, type PodWatchView } from "./pod-watch-view.js";

/** Consecutive failed API reads tolerated before the cluster counts as unreachable. */
const MAX_READ_FAILURES = 5;

/** Reads the run's pod once: the pod (or undefined when none exists yet), or why the read failed; throws when it is refused (403, 401). */
export async function readRunPod(
  ctx: ExecutorContext,
): Promise<{ pod: IPod | undefined } | { failure: string; unreachable: boolean }> {
  let pods: IPod[];
  try {
    pods = await ctx.cluster.listPods(ctx.settings.target.namespace, buildRunSelector(ctx.settings.runIdLabel), {
      signal: ctx.signal,
    });
  } catch (error) {
    if (ctx.signal.aborted) throw new CancelledError();
    const denied = describeRefusal(error, "cannot read the run's pods");
    if (denied) throw denied;
    if (!(error instanceof ClusterError)) throw error;
    return { failure: error.message, unreachable: error instanceof UnavailableError && error.reason === "unreachable" };
  }
  if (ctx.signal.aborted) throw new CancelledError();
  return { pod: pickRunPod(pods) };
}

/**
 * Throws InfraError pod-config for a pod no node will take: the autoscaler said it will not add one
 * (NotTriggerScaleUp), or no node's labels meet its selector for `unplaceableGraceMs` with no autoscaler adding one.
 */
function checkPlaceable(
  ctx: ExecutorContext,
  pod: IPod | undefined,
  name: string,
  mismatchForMs: number,
  autoscaler: AutoscalerVerdict | undefined,
): void {
  if (autoscaler?.kind === "not-scaling-up") {
    throw new InfraError(
      "pod-config",
      `pod ${name} cannot be placed: the cluster autoscaler will not add a node for its ${describePlacement(pod)}: NotTriggerScaleUp: ${autoscaler.message}`,
    );
  }
  if (isSelectorMismatch(pod) && mismatchForMs >= ctx.timings.unplaceableGraceMs && autoscaler?.kind !== "scaling-up") {
    const message = pod?.status?.conditions?.find((condition) => condition.type === "PodScheduled")?.message ?? "";
    throw new InfraError(
      "pod-config",
      `pod ${name} cannot be scheduled: no node matches its ${describePlacement(pod)}, and no autoscaler added one in ${Math.round(mismatchForMs / 1000)}s: Unschedulable: ${message}`,
    );
  }
}

/**
 * Waits until the pod runs, looking at it through the cluster's pod watch (one shared watch for every run of an API
 * transport; polls on ctx.timings.podPollMs for kubectl) and again at least on that schedule, for the time-based
 * verdicts, and from ctx.timings.podEventsAfterMs on at the events of the pod (of its Job before the pod exists)
 * through the cluster's events watch (shared likewise; polled every podEventsEveryMs for kubectl); throws InfraError
 * (pod-timeout, image-pull, pod-config, pod-lost, cluster-unreachable, forbidden, unauthorized).
 */
export async function waitForPod(ctx: ExecutorContext, deadlineAt: number): Promise<RunPod> {
  const view = openPodWatchView(ctx);
  const events = openPodEventsView(ctx);
  try {
    await view.ready();
    return await followPod(ctx, view, events, deadlineAt);
  } finally {
    events.close();
    view.close();
  }
}

async function followPod(
  ctx: ExecutorContext,
  view: PodWatchView,
  eventsView: PodEventsView,
  deadlineAt: number,
): Promise<RunPod> {
  const started = Date.now();
  let pullFailingSince: number | undefined;
  let lastEvent: string | undefined;
  let autoscaler: AutoscalerVerdict | undefined;
  let mismatchSince: number | undefined;
  let lastProgress = 0;
  let lastSummary = "";
  let state: PodState;
  for (let poll = 0; ; poll++) {
    const read = view.look();
    if ("failure" in read) {
      if (read.final || read.tries >= MAX_READ_FAILURES) {
        throw new InfraError(
          "cluster-unreachable",
          `cannot read the run's pod (${read.tries} ${read.tries === 1 ? "try" : "tries"}, ${Math.round((Date.now() - started) / 1000)}s into the wait for it): ${read.failure}`,
        );
      }
    } else {
      const now = Date.now();
      if (isImagePullFailing(read.pod)) pullFailingSince ??= now;
      else pullFailingSince = undefined;
      state = classifyPod(
        read.pod,
        pullFailingSince === undefined ? 0 : now - pullFailingSince,
        ctx.timings.imagePullGraceMs,
      );
      if (state.kind === "running") {
        ctx.emit({ kind: "pod-ready", pod: state.name, node: state.node, waitedMs: now - started });
        return { name: state.name, node: state.node };
      }
      if (state.kind === "stuck") {
        const reason = state.reason.includes("Image") ? "image-pull" : "pod-config";
        // Which wait gave up and after how long, as every exit 3 says: a pull fails only after the grace.
        const failing =
          pullFailingSince === undefined ? "" : ` (pulls failing for ${formatDuration(now - pullFailingSince)})`;
        throw new InfraError(reason, `pod ${state.name} cannot start: ${state.reason}: ${state.message}${failing}`);
      }
      if (state.kind === "gone")
        throw new InfraError(
          "pod-lost",
          `pod ${state.name} ended before the run started: ${state.reason}: ${state.message}`,
        );
      const { podEventsAfterMs, podProgressRepeatMs } = ctx.timings;
      if (now - started >= podEventsAfterMs) {
        const subject =
          state.kind === "pending"
            ? { kind: "Pod" as const, name: state.name }
            : { kind: "Job" as const, name: ctx.settings.jobName };
        const events = await eventsView.look(subject);
        lastEvent = events.latest ?? lastEvent;
        const refusal = subject.kind === "Job" ? findAdmissionRefusal(events.latest) : undefined;
        if (refusal)
          throw new InfraError("pod-config", `the cluster refused the run's pod at create (admission): ${refusal}`);
        autoscaler = events.autoscaler ?? autoscaler;
      }
      if (isSelectorMismatch(read.pod)) mismatchSince ??= now;
      else mismatchSince = undefined;
      if (state.kind === "pending")
        checkPlaceable(ctx, read.pod, state.name, mismatchSince === undefined ? 0 : now - mismatchSince, autoscaler);
      const summary = describePending(state, lastEvent);
      if (summary !== lastSummary || now - lastProgress >= podProgressRepeatMs) {
        lastSummary = summary;
        lastProgress = now;
        ctx.emit({
          kind: "pod-progress",
          elapsedMs: now - started,
          phase: state.kind === "pending" ? state.phase : "NoPodYet",
          ...(state.kind === "pending" && state.reason ? { reason: state.reason } : {}),
          ...(state.kind === "pending" && state.message ? { message: state.message } : {}),
          ...(lastEvent ? { event: lastEvent } : {}),
        });
      }
    }
    if (Date.now() >= deadlineAt) {
      throw new InfraError(
        "pod-timeout",
        `the pod was not running after ${Math.round((Date.now() - started) / 1000)}s: ${lastSummary || "no pod yet"}`,
      );
    }
    const interval = ctx.timings.podPollMs[Math.min(poll, ctx.timings.podPollMs.length - 1)] ?? 1000;
    await view.settle(Math.min(interval, Math.max(0, deadlineAt - Date.now())));
  }
}

function describePending(state: PodState, event: string | undefined): string {
  const base =
    state.kind === "pending"
      ? [state.phase, state.reason].filter(Boolean).join(" ")
      : "waiting for the Job to create its pod";
  return event ? `${base} (${event})` : base;
}
