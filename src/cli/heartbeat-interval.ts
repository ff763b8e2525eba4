// The heartbeat's refresh interval as the CLI resolves it: 30 s, or KNOTLESS_HEARTBEAT_INTERVAL (for tests and slow clusters).
import { readDuration } from "../core/duration.js";
import { DEFAULT_TIMINGS } from "../executor/kubernetes/context.js";
import { InputError } from "../core/errors.js";

export const HEARTBEAT_INTERVAL_VARIABLE = "KNOTLESS_HEARTBEAT_INTERVAL";
/** Below this, refreshes would be API load for nothing. */
const MIN_INTERVAL_MS = 1000;

/**
 * Milliseconds between refreshes of a run's heartbeat annotation. `run` refreshes at this interval; `gc` refuses a
 * --stale-after under twice it, so both must see the same value (the same environment).
 */
export function readHeartbeatInterval(env: NodeJS.ProcessEnv): number {
  const text = env[HEARTBEAT_INTERVAL_VARIABLE];
  if (text === undefined || text === "") return DEFAULT_TIMINGS.heartbeatIntervalMs;
  const ms = readDuration(text, HEARTBEAT_INTERVAL_VARIABLE);
  if (ms < MIN_INTERVAL_MS) throw new InputError(`${HEARTBEAT_INTERVAL_VARIABLE} expects at least 1s, got "${text}"`);
  return ms;
}
