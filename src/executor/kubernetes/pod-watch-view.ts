// The run's pod as the cluster's pod watch last told it (Cluster.watchPods): the pod wait reads it without a request per look.
import type { IPod } from "kubernetes-models/v1/Pod";
import { ClusterError, UnavailableError } from "../../cluster/errors.js";
import { describeRefusal } from "../../cluster/refusal.js";
import { CancelledError } from "../../core/errors.js";
import { buildRunSelector } from "../../manifests/labels.js";
import { pickRunPod } from "../../manifests/pod-state.js";
import type { ExecutorContext } from "./context.js";

/** What the view knows: the run's pod (undefined: none yet), or why it cannot say (failed reads in a row, or the watch's end). */
export type PodLook =
  | { readonly pod: IPod | undefined }
  | { readonly failure: string; readonly unreachable: boolean; readonly tries: number; readonly final: boolean };

export interface PodWatchView {
  /** Resolves once the watch has listed, failed a read or ended; CancelledError when the run is cancelled first. */
  ready(): Promise<void>;
  /** The latest look; throws the InfraError of a refusal (403, 401), CancelledError once cancelled. */
  look(): PodLook;
  /** Resolves after `ms`, or sooner when the watch says something new; CancelledError when the run is cancelled. */
  settle(ms: number): Promise<void>;
  /** Ends the watch (a kubectl poll in flight is killed). */
  close(): void;
}

/** Starts the run's pod watch (ctx.timings.podPollMs paces a polling transport's reads). */
export function openPodWatchView(ctx: ExecutorContext): PodWatchView {
  const controller = new AbortController();
  const cancel = (): void => controller.abort();
  ctx.signal.addEventListener("abort", cancel, { once: true });
  const pods = new Map<string, IPod>();
  let synced = false;
  let tries = 0;
  let lastFailure: ClusterError | undefined;
  let ended: { error: unknown } | undefined;
  let news = false;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    news = true;
    const resume = wake;
    wake = undefined;
    resume?.();
  };
  ctx.cluster
    .watchPods(ctx.settings.target.namespace, buildRunSelector(ctx.settings.runIdLabel), {
      signal: controller.signal,
      pollMs: ctx.timings.podPollMs,
      onEvent: (change) => {
        const name = change.object.metadata?.name ?? "";
        if (change.type === "DELETED") pods.delete(name);
        else pods.set(name, change.object);
        notify();
      },
      onSynced: () => {
        synced = true;
        tries = 0;
        notify();
      },
      onRetry: (error) => {
        tries += 1;
        lastFailure = error instanceof ClusterError ? error : new ClusterError("other", String(error));
        notify();
      },
    })
    .then(
      () => (ended ??= { error: new ClusterError("other", "the pod watch ended") }),
      (error: unknown) => (ended = { error }),
    )
    .finally(notify);
  const throwIfCancelled = (): void => {
    if (ctx.signal.aborted) throw new CancelledError();
  };
  const view: PodWatchView = {
    async ready() {
      while (!synced && tries === 0 && !ended) await view.settle(60_000);
      throwIfCancelled();
    },
    look() {
      throwIfCancelled();
      news = false;
      if (ended && !controller.signal.aborted) {
        const denied = describeRefusal(ended.error, "cannot read the run's pods");
        if (denied) throw denied;
        if (!(ended.error instanceof ClusterError)) throw ended.error;
        return {
          failure: ended.error.message,
          unreachable: isUnreachable(ended.error),
          tries: Math.max(tries, 1),
          final: true,
        };
      }
      if (tries > 0 && lastFailure)
        return { failure: lastFailure.message, unreachable: isUnreachable(lastFailure), tries, final: false };
      return { pod: pickRunPod([...pods.values()]) };
    },
    async settle(ms) {
      throwIfCancelled();
      if (news) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, ms);
        function done(): void {
          clearTimeout(timer);
          ctx.signal.removeEventListener("abort", done);
          wake = undefined;
          resolve();
        }
        wake = done;
        ctx.signal.addEventListener("abort", done, { once: true });
      });
      throwIfCancelled();
    },
    close() {
      ctx.signal.removeEventListener("abort", cancel);
      controller.abort();
    },
  };
  return view;
}

function isUnreachable(error: ClusterError): boolean {
  return error instanceof UnavailableError && error.reason === "unreachable";
}
