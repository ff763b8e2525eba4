// Waits for the Job's pod to run, reporting Pending progress and failing fast on states that will not cure.
import { setTimeout as sleep } from "node:timers/promises";
import type { IEventList } from "kubernetes-models/v1/EventList";
import type { IPodList } from "kubernetes-models/v1/PodList";
import type { IPod } from "kubernetes-models/v1/Pod";
import { CancelledError, InfraError } from "../errors.js";
import { buildGetEventsArgs, buildGetPodsArgs } from "../cluster/kubectl/kubectl-args.js";
import { classifyKubectlFailure, findPermissionError, summarizeStderr } from "../cluster/kubectl/kubectl-errors.js";
import { buildRunSelector } from "../k8s/labels.js";
import { classifyPod, isImagePullFailing, pickRunPod, type PodState } from "../k8s/pod-state.js";
import type { ExecutorContext } from "./context.js";
import type { RunPod } from "./executor.js";

/** Consecutive failed API reads tolerated before the cluster counts as unreachable. */
const MAX_READ_FAILURES = 5;

/** Reads the run's pod once: the pod (or undefined when none exists yet), or why the read failed; throws when it is refused (403, 401). */
export async function readRunPod(ctx: ExecutorContext): Promise<{ pod: IPod | undefined } | { failure: string; unreachable: boolean }> {
  const result = await ctx.kubectl.run(buildGetPodsArgs(ctx.settings.target, buildRunSelector(ctx.settings.runIdLabel)), { signal: ctx.signal });
  if (ctx.signal.aborted) throw new CancelledError();
  if (result.exitCode !== 0) {
    const denied = findPermissionError(result.stderr, "cannot read the run's pods");
    if (denied) throw denied;
    const kind = classifyKubectlFailure(result.stderr);
    return { failure: summarizeStderr(result.stderr), unreachable: kind === "unreachable" };
  }
  try {
    const list = JSON.parse(result.stdout) as IPodList;
    return { pod: pickRunPod(list.items ?? []) };
  } catch {
    return { failure: "kubectl printed a pod list that is not JSON", unreachable: false };
  }
}

/**
 * The newest event of an object, as `Reason: message`, or undefined when there is none or it cannot be read now.
 * A refusal (403, 401) throws: a credential without the permission would otherwise hide every Pending reason.
 */
async function readLatestEvent(ctx: ExecutorContext, kind: "Pod" | "Job", name: string): Promise<string | undefined> {
  const result = await ctx.kubectl.run(buildGetEventsArgs(ctx.settings.target, kind, name), { signal: ctx.signal });
  if (ctx.signal.aborted) throw new CancelledError();
  if (result.exitCode !== 0) {
    const denied = findPermissionError(result.stderr, `cannot read the events of ${kind} ${name}`);
    if (denied) throw denied;
    return undefined;
  }
  try {
    const list = JSON.parse(result.stdout) as IEventList;
    const stamp = (e: (typeof list.items)[number]): string => e.lastTimestamp ?? e.eventTime ?? e.metadata?.creationTimestamp ?? "";
    const latest = [...(list.items ?? [])].sort((a, b) => stamp(a).localeCompare(stamp(b))).at(-1);
    return latest ? `${latest.reason ?? "Event"}: ${latest.message ?? ""}`.trim() : undefined;
  } catch {
    return undefined;
  }
}

/** Polls until the pod runs; throws InfraError (pod-timeout, image-pull, pod-config, pod-lost, cluster-unreachable, forbidden, unauthorized). */
export async function waitForPod(ctx: ExecutorContext, deadlineAt: number): Promise<RunPod> {
  const started = Date.now();
  let failures = 0;
  let pullFailingSince: number | undefined;
  let lastEventRead = 0;
  let lastEvent: string | undefined;
  let lastProgress = 0;
  let lastSummary = "";
  let state: PodState = { kind: "absent" };
  for (let poll = 0; ; poll++) {
    const read = await readRunPod(ctx);
    if ("failure" in read) {
      failures += 1;
      if (failures >= MAX_READ_FAILURES) {
        throw new InfraError("cluster-unreachable", `cannot read the run's pod (${failures} tries): ${read.failure}`);
      }
    } else {
      failures = 0;
      const now = Date.now();
      if (isImagePullFailing(read.pod)) pullFailingSince ??= now;
      else pullFailingSince = undefined;
      state = classifyPod(read.pod, pullFailingSince === undefined ? 0 : now - pullFailingSince, ctx.timings.imagePullGraceMs);
      if (state.kind === "running") {
        ctx.emit({ kind: "pod-ready", pod: state.name, node: state.node, waitedMs: now - started });
        return { name: state.name, node: state.node };
      }
      if (state.kind === "stuck") {
        const reason = state.reason.includes("Image") ? "image-pull" : "pod-config";
        throw new InfraError(reason, `pod ${state.name} cannot start: ${state.reason}: ${state.message}`);
      }
      if (state.kind === "gone") throw new InfraError("pod-lost", `pod ${state.name} ended before the run started: ${state.reason}: ${state.message}`);
      const { podEventsAfterMs, podEventsEveryMs, podProgressRepeatMs } = ctx.timings;
      if (now - lastEventRead >= podEventsEveryMs && now - started >= podEventsAfterMs) {
        lastEventRead = now;
        const subject = state.kind === "pending" ? { kind: "Pod" as const, name: state.name } : { kind: "Job" as const, name: ctx.settings.jobName };
        lastEvent = (await readLatestEvent(ctx, subject.kind, subject.name)) ?? lastEvent;
      }
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
      throw new InfraError("pod-timeout", `the pod was not running after ${Math.round((Date.now() - started) / 1000)}s: ${lastSummary || "no pod yet"}`);
    }
    const interval = ctx.timings.podPollMs[Math.min(poll, ctx.timings.podPollMs.length - 1)] ?? 1000;
    try {
      await sleep(Math.min(interval, Math.max(0, deadlineAt - Date.now())), undefined, { signal: ctx.signal });
    } catch {
      throw new CancelledError();
    }
  }
}

function describePending(state: PodState, event: string | undefined): string {
  const base = state.kind === "pending" ? [state.phase, state.reason].filter(Boolean).join(" ") : "waiting for the Job to create its pod";
  return event ? `${base} (${event})` : base;
}
