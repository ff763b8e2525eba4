// A safety net for a lifecycle call once its run is cancelled: the call gets the clean-up's time to unwind, then is abandoned.
import { CancelledError } from "../../core/errors.js";
import type { ExecutorContext } from "./context.js";

/** Over cancelCleanupMs, so the call's own clean-up bound (the cleanup signal) fires first when it works. */
const ABANDON_MARGIN_MS = 2_000;

/**
 * Settles as `work` does; but once ctx.signal is aborted, a call not settled within cancelCleanupMs and a margin is
 * abandoned: it rejects with the signal's reason (a CancelledError), so teardown deletes the Job, which also ends
 * whatever the call still waits on. Never the way a cancel normally ends: a wait that missed the cancel.
 */
export function yieldToCancel<T>(
  ctx: Pick<ExecutorContext, "signal" | "timings" | "emit">,
  what: string,
  work: Promise<T>,
): Promise<T> {
  const { signal } = ctx;
  const boundMs = ctx.timings.cancelCleanupMs + ABANDON_MARGIN_MS;
  let timer: NodeJS.Timeout | undefined;
  let start: (() => void) | undefined;
  const abandoned = new Promise<never>((_resolve, reject) => {
    start = (): void => {
      timer = setTimeout(() => {
        ctx.emit({
          kind: "notice",
          level: "warning",
          message: `${what} did not end within ${Math.round(boundMs / 1000)}s of the cancel: abandoned, the Job is deleted`,
        });
        reject(signal.reason instanceof Error ? signal.reason : new CancelledError());
      }, boundMs);
    };
    if (signal.aborted) start();
    else signal.addEventListener("abort", start, { once: true });
  });
  return Promise.race([work, abandoned]).finally(() => {
    clearTimeout(timer);
    if (start) signal.removeEventListener("abort", start);
  });
}
