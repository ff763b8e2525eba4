// Refreshes the run's heartbeat annotation on its Job every interval, so that gc can tell a live run from an abandoned one.
import { formatPermissions, PATCH_JOB_PERMISSIONS } from "../../cluster/permissions.js";
import { describeRefusal } from "../../cluster/refusal.js";
import { describeError, type InfraError } from "../../core/errors.js";
import { HEARTBEAT_ANNOTATION } from "../../manifests/labels.js";
import type { ExecutorContext } from "./context.js";

/** A running heartbeat; `stop` ends it and waits for a refresh in flight to end (it is aborted). */
export interface Heartbeat {
  /**
   * The first refresh's verdict, made at once when the heartbeat starts (the run's setup): the permission error when
   * the API server refused it (403, 401), else undefined (it worked, failed otherwise and was warned of, or was
   * stopped). Never rejects. A run that cannot refresh its heartbeat would look abandoned to gc within
   * `--stale-after`, so the executor fails its setup on a refusal rather than run on.
   */
  readonly first: Promise<InfraError | undefined>;
  stop(): Promise<void>;
  /** Stops it at once, without waiting (a runner about to exit): aborts a refresh in flight. */
  stopNow(): void;
}

/**
 * Patches `knotless.dev/heartbeat` = the current time onto the Job at once, then every `heartbeatIntervalMs`, each
 * refresh starting one interval after the one before (or at once, when that one took longer). A refused first refresh
 * is reported through `first`, not as a warning. Any later failure, and a first one that is not a refusal (a
 * transient error), is a warning (once until one succeeds again), never a failure of the run. The Job's
 * creationTimestamp stands for the heartbeat until the first refresh lands.
 */
export function startHeartbeat(ctx: ExecutorContext, now: () => Date = () => new Date()): Heartbeat {
  const { settings, timings, cluster, emit } = ctx;
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  let failing = false;
  const report = (failure: string | undefined): void => {
    if (failure === undefined) {
      if (failing)
        emit({
          kind: "notice",
          level: "info",
          message: `heartbeat: ${HEARTBEAT_ANNOTATION} on Job ${settings.jobName} is refreshed again`,
        });
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
  let settleFirst: (refused: InfraError | undefined) => void = () => {};
  const first = new Promise<InfraError | undefined>((resolve) => (settleFirst = resolve));
  let isFirst = true;
  const refresh = async (): Promise<void> => {
    const annotations = { [HEARTBEAT_ANNOTATION]: now().toISOString() };
    const wasFirst = isFirst;
    isFirst = false;
    try {
      await cluster.patchJobAnnotations(settings.target.namespace, settings.jobName, annotations, {
        signal: controller.signal,
      });
      if (controller.signal.aborted) return;
      report(undefined);
    } catch (error) {
      if (controller.signal.aborted) return;
      const refused = wasFirst
        ? describeRefusal(
            error,
            `cannot set the run's heartbeat on Job ${settings.jobName} (it needs ${formatPermissions(PATCH_JOB_PERMISSIONS)}; without it gc would take the live run for abandoned)`,
          )
        : undefined;
      if (refused) {
        failing = true; // the run fails on it; no warning that it goes on, and none for the refusals after it
        settleFirst(refused);
        return;
      }
      report(describeError(error));
    } finally {
      if (wasFirst) settleFirst(undefined);
    }
  };
  // Refreshes start one interval apart (never two at once): a slow refresh does not push the next one later, so the
  // heartbeat is never older than the interval plus one refresh's time, whatever the API server's latency.
  const beat = (): void => {
    const started = Date.now();
    inFlight = refresh().finally(() => {
      inFlight = undefined;
      if (!controller.signal.aborted) schedule(Math.max(0, timings.heartbeatIntervalMs - (Date.now() - started)));
    });
  };
  const schedule = (delayMs: number): void => {
    timer = setTimeout(beat, delayMs);
    timer.unref();
  };
  beat(); // the first one at once, not from an unref'd timer: setup waits for its verdict
  const stopNow = (): void => {
    clearTimeout(timer);
    controller.abort();
    settleFirst(undefined);
  };
  return {
    first,
    stopNow,
    stop: async () => {
      stopNow();
      await inFlight;
    },
  };
}
