// The executor's timings as the CLI resolves them: the defaults, the heartbeat interval, and KNOTLESS_EXECUTOR_TIMINGS (tests).
import { InputError } from "../core/errors.js";
import { DEFAULT_TIMINGS, type ExecutorTimings } from "../executor/kubernetes/context.js";
import { readHeartbeatInterval } from "./heartbeat-interval.js";

export const EXECUTOR_TIMINGS_VARIABLE = "KNOTLESS_EXECUTOR_TIMINGS";

/**
 * The timings `run` passes on: the heartbeat interval, and over it a JSON object of ExecutorTimings fields from
 * KNOTLESS_EXECUTOR_TIMINGS, so end-to-end tests shorten retry backoff instead of sleeping through the defaults.
 * Unset (as in production), every other timing is its default.
 */
export function readExecutorTimings(env: NodeJS.ProcessEnv): Partial<ExecutorTimings> {
  const heartbeat = { heartbeatIntervalMs: readHeartbeatInterval(env) };
  const text = env[EXECUTOR_TIMINGS_VARIABLE];
  if (text === undefined || text === "") return heartbeat;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new InputError(`${EXECUTOR_TIMINGS_VARIABLE} is not JSON: ${JSON.stringify(text)}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new InputError(`${EXECUTOR_TIMINGS_VARIABLE} expects a JSON object of timings, got ${JSON.stringify(text)}`);
  const unknown = Object.keys(parsed).filter((key) => !(key in DEFAULT_TIMINGS));
  if (unknown.length > 0)
    throw new InputError(
      `${EXECUTOR_TIMINGS_VARIABLE} names timings that do not exist: ${unknown.join(", ")} (known: ${Object.keys(DEFAULT_TIMINGS).join(", ")})`,
    );
  const timings = parsed as Partial<ExecutorTimings>;
  // The beat is rendered into the pod's shell: a whole number of seconds (busybox's sleep may take no fraction).
  if (timings.beatSeconds !== undefined && !(Number.isSafeInteger(timings.beatSeconds) && timings.beatSeconds > 0))
    throw new InputError(
      `${EXECUTOR_TIMINGS_VARIABLE} expects beatSeconds to be a whole number of seconds > 0, got ${JSON.stringify(timings.beatSeconds)}`,
    );
  return { ...heartbeat, ...timings };
}
