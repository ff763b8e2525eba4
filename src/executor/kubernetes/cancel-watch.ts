// Watches the run's Job for a cancel requested through the cluster (`knotless-runner-k8s cancel`, from any host).
import { ConfigError, ForbiddenError, NotFoundError, UnauthorizedError } from "../../cluster/errors.js";
import { formatPermissions, WATCH_JOB_PERMISSIONS } from "../../cluster/permissions.js";
import { CancelledError, describeError } from "../../core/errors.js";
import { readCancelRequest, type CancelRequest } from "../../manifests/job-annotations.js";
import { CANCEL_REQUESTED_ANNOTATION } from "../../manifests/labels.js";
import { retry, type AttemptOutcome } from "../../core/retry.js";
import type { ExecutorContext } from "./context.js";

/** A running watch; `stop` ends it and resolves once it has ended. */
export interface CancelWatch {
  stop(): Promise<void>;
  /** Ends the watch at once, without waiting (a runner about to exit). */
  stopNow(): void;
}

/** How one watch of the Job ended. */
type WatchEnd =
  | { readonly kind: "cancel"; readonly request: CancelRequest }
  /** The Job was deleted (by gc, by hand): nothing more to watch; the run finds its pod gone on its own. */
  | { readonly kind: "deleted" }
  /** The watch ended on its own (the transport's bound), or failed with `error`. */
  | { readonly kind: "ended"; readonly events: number; readonly error?: unknown };

/**
 * Streams the Job's changes (kubectl GETs it first, so a request made before the watch began is seen at once)
 * and calls `onCancel` when `knotless.dev/cancel-requested` appears, then stops. The watch is started again when
 * it ends (kubectl ends it cleanly every few minutes) or fails (cancelWatchRetry); a failure is a warning, once
 * until a watch works again. A credential that may not watch the Job ends it with a warning: cancel requests from
 * other processes then go unnoticed, the run itself goes on.
 */
export function startCancelWatch(ctx: ExecutorContext, onCancel: (request: CancelRequest) => void): CancelWatch {
  const { settings, emit } = ctx;
  const controller = new AbortController();
  let warned = false;
  const warn = (message: string): void => {
    if (warned) return;
    warned = true;
    emit({ kind: "notice", level: "warning", message: `cancel watch: ${message}` });
  };
  const done = retry(
    ctx.timings.cancelWatchRetry,
    { signal: controller.signal, giveUp: (reasons) => new Error(reasons.at(-1)) },
    async (): Promise<AttemptOutcome<undefined>> => {
      const end = await watchOnce(ctx, controller.signal);
      if (controller.signal.aborted) throw new CancelledError();
      if (end.kind === "cancel") {
        onCancel(end.request);
        return { done: true, value: undefined };
      }
      if (end.kind === "deleted") return { done: true, value: undefined };
      if (end.events > 0) warned = false; // it worked again
      if (end.error === undefined) return { done: false, reason: "the watch ended", progressed: end.events > 0 };
      const said = describeError(end.error);
      if (end.error instanceof NotFoundError) return { done: true, value: undefined };
      if (
        end.error instanceof ForbiddenError ||
        end.error instanceof UnauthorizedError ||
        end.error instanceof ConfigError
      ) {
        // kubectl before 1.33 prints a refused watch as `Forbidden: unknown (get jobs.batch)`: say what it needs.
        const needs =
          end.error instanceof ConfigError ? "" : `; the watch needs ${formatPermissions(WATCH_JOB_PERMISSIONS)}`;
        warn(
          `cannot watch Job ${settings.jobName} (${said}${needs}); a cancel requested with \`knotless-runner-k8s cancel\` will not reach this run`,
        );
        return { done: true, value: undefined };
      }
      warn(`watching Job ${settings.jobName} for ${CANCEL_REQUESTED_ANNOTATION} failed (${said}); retrying`);
      return { done: false, reason: said, progressed: end.events > 0 };
    },
  ).catch((error: unknown) => {
    if (!(error instanceof CancelledError)) warn(`stopped: ${describeError(error)}`);
  });
  const stopNow = (): void => controller.abort();
  return {
    stopNow,
    stop: async () => {
      stopNow();
      await done;
    },
  };
}

/** One watch: reads the Job's events until a cancel request, the Job's deletion, or the watch's end. */
async function watchOnce(ctx: ExecutorContext, signal: AbortSignal): Promise<WatchEnd> {
  const found = new AbortController();
  let events = 0;
  let end: WatchEnd | undefined;
  try {
    await ctx.cluster.watchJob(ctx.settings.target.namespace, ctx.settings.jobName, {
      signal: AbortSignal.any([signal, found.signal]),
      onEvent: (event) => {
        if (end) return;
        events += 1;
        const request = event.type === "DELETED" ? undefined : readCancelRequest(event.object);
        if (request) end = { kind: "cancel", request };
        else if (event.type === "DELETED") end = { kind: "deleted" };
        if (end) found.abort();
      },
    });
  } catch (error) {
    return end ?? { kind: "ended", events, error };
  }
  return end ?? { kind: "ended", events };
}
