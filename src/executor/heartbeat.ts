// Refreshes the run's heartbeat annotation on its Job every interval, so that gc can tell a live run from an abandoned one.
import { describeError } from "../errors.js";
import { buildAnnotateJobArgs } from "../k8s/kubectl-args.js";
import { summarizeStderr } from "../k8s/kubectl-errors.js";
import { HEARTBEAT_ANNOTATION } from "../k8s/labels.js";
import type { ExecutorContext } from "./context.js";

/** A running heartbeat; `stop` ends it and waits for a refresh in flight to end (it is killed). */
export interface Heartbeat {
  stop(): Promise<void>;
  /** Stops it at once, without waiting (a runner about to exit): kills a refresh in flight. */
  stopNow(): void;
}

/**
 * Patches `knotless.dev/heartbeat` = the current time onto the Job every `heartbeatIntervalMs`, the next refresh
 * timed from the end of the last. A failed refresh is a warning (once until one succeeds again), never a failure of
 * the run. The Job's creationTimestamp stands for the heartbeat until the first refresh.
 */
export function startHeartbeat(ctx: ExecutorContext, now: () => Date = () => new Date()): Heartbeat {
  const { settings, timings, kubectl, emit } = ctx;
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  let failing = false;
  const report = (failure: string | undefined): void => {
    if (failure === undefined) {
      if (failing) emit({ kind: "notice", level: "info", message: `heartbeat: ${HEARTBEAT_ANNOTATION} on Job ${settings.jobName} is refreshed again` });
      failing = false;
      return;
    }
    if (failing) return;
    failing = true;
    emit({
      kind: "notice",
      level: "warning",
      message: `heartbeat: could not refresh ${HEARTBEAT_ANNOTATION} on Job ${settings.jobName} (${failure}); the run goes on, but gc takes a run whose heartbeat is older than its --stale-after for abandoned`,
    });
  };
  const refresh = async (): Promise<void> => {
    const args = buildAnnotateJobArgs(settings.target, settings.jobName, { [HEARTBEAT_ANNOTATION]: now().toISOString() });
    try {
      const result = await kubectl.run(args, { signal: controller.signal });
      if (controller.signal.aborted) return;
      report(result.exitCode === 0 ? undefined : summarizeStderr(result.stderr));
    } catch (error) {
      if (!controller.signal.aborted) report(describeError(error));
    }
  };
  const schedule = (): void => {
    timer = setTimeout(() => {
      inFlight = refresh().finally(() => {
        inFlight = undefined;
        if (!controller.signal.aborted) schedule();
      });
    }, timings.heartbeatIntervalMs);
    timer.unref();
  };
  schedule();
  const stopNow = (): void => {
    clearTimeout(timer);
    controller.abort();
  };
  return {
    stopNow,
    stop: async () => {
      stopNow();
      await inFlight;
    },
  };
}
