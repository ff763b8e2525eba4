// The events of the object the pod wait is asking about, as the cluster's events watch last told them (Cluster.watchEvents).
import type { IEvent } from "kubernetes-models/v1/Event";
import type { InvolvedObject } from "../../cluster/cluster.js";
import { describeRefusal } from "../../cluster/refusal.js";
import { CancelledError } from "../../core/errors.js";
import { findAutoscalerVerdict, type AutoscalerVerdict } from "../../manifests/unplaceable.js";
import type { ExecutorContext } from "./context.js";

/** The newest event as `Reason: message`, and the autoscaler's word; either absent when there is none or none is known yet. */
export interface LatestEvents {
  readonly latest?: string;
  readonly autoscaler?: AutoscalerVerdict;
}

export interface PodEventsView {
  /**
   * What the watch of `subject`'s events knows now. The first look at a subject (or the first after its watch ended on
   * a failure, at most every ctx.timings.podEventsEveryMs) opens its watch, closing the previous subject's, and waits
   * for its first list or failure. Throws the InfraError of a refusal (403, 401) and CancelledError; any other failure
   * is an empty answer, since events only explain a wait.
   */
  look(subject: InvolvedObject): Promise<LatestEvents>;
  /** Ends the watch. */
  close(): void;
}

interface SubjectWatch {
  readonly subject: InvolvedObject;
  readonly controller: AbortController;
  readonly events: Map<string, IEvent>;
  /** Resolves at the first list, failure or end. */
  readonly first: Promise<void>;
  ended?: { readonly error: unknown; readonly at: number };
}

/** Opens nothing until the first look; ctx.timings.podEventsEveryMs paces a polling transport's reads. */
export function openPodEventsView(ctx: ExecutorContext): PodEventsView {
  let current: SubjectWatch | undefined;

  const open = (subject: InvolvedObject): SubjectWatch => {
    const controller = new AbortController();
    const events = new Map<string, IEvent>();
    let settle: () => void = () => undefined;
    const first = new Promise<void>((resolve) => (settle = resolve));
    const watch: SubjectWatch = { subject, controller, events, first };
    const stop = (): void => controller.abort();
    ctx.signal.addEventListener("abort", stop, { once: true });
    ctx.cluster
      .watchEvents(ctx.settings.target.namespace, subject, {
        signal: controller.signal,
        pollMs: [ctx.timings.podEventsEveryMs],
        onEvent: (change) => {
          const name = change.object.metadata?.name ?? "";
          if (change.type === "DELETED") events.delete(name);
          else events.set(name, change.object);
        },
        onSynced: settle,
        onRetry: settle,
      })
      .then(
        () => (watch.ended ??= { error: undefined, at: Date.now() }),
        (error: unknown) => (watch.ended = { error, at: Date.now() }),
      )
      .finally(() => {
        ctx.signal.removeEventListener("abort", stop);
        settle();
      });
    return watch;
  };

  return {
    async look(subject) {
      if (ctx.signal.aborted) throw new CancelledError();
      const same = current?.subject.kind === subject.kind && current.subject.name === subject.name;
      const retry =
        current?.ended !== undefined &&
        !current.controller.signal.aborted &&
        Date.now() - current.ended.at >= ctx.timings.podEventsEveryMs;
      if (!same || retry) {
        current?.controller.abort();
        current = open(subject);
        await untilFirstOrCancelled(current.first, ctx.signal);
      }
      const watch = current!;
      if (watch.ended && !watch.controller.signal.aborted) {
        const denied = describeRefusal(watch.ended.error, `cannot read the events of ${subject.kind} ${subject.name}`);
        if (denied) throw denied;
      }
      return summarize([...watch.events.values()]);
    },
    close() {
      current?.controller.abort();
    },
  };
}

/** Resolves with `first`; CancelledError once the run is cancelled first. */
async function untilFirstOrCancelled(first: Promise<void>, signal: AbortSignal): Promise<void> {
  let cancelled: () => void = () => undefined;
  try {
    await Promise.race([
      first,
      new Promise<void>((resolve) => signal.addEventListener("abort", (cancelled = () => resolve()), { once: true })),
    ]);
  } finally {
    signal.removeEventListener("abort", cancelled);
  }
  if (signal.aborted) throw new CancelledError();
}

function summarize(events: readonly IEvent[]): LatestEvents {
  const stamp = (e: IEvent): string => e.lastTimestamp ?? e.eventTime ?? e.metadata?.creationTimestamp ?? "";
  const latest = [...events].sort((a, b) => stamp(a).localeCompare(stamp(b))).at(-1);
  const autoscaler = findAutoscalerVerdict(events);
  return {
    ...(latest ? { latest: `${latest.reason ?? "Event"}: ${latest.message ?? ""}`.trim() } : {}),
    ...(autoscaler ? { autoscaler } : {}),
  };
}
