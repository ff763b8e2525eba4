// Reads --pod-idle-timeout (run and serve): how long a run's pod waits without a runner exec before it stops itself.
import { readDuration } from "../core/duration.js";
import { InputError } from "../core/errors.js";
import { BEAT_SECONDS, DEFAULT_POD_IDLE_SECONDS } from "../pod/keep-alive.js";

/**
 * Milliseconds: the default 10 min, else a duration of at least three beats of a runner exec (`beatSeconds`, the
 * executor's timing; tests shorten it), so one late beat never stops the pod.
 */
export function readPodIdleTimeout(text: string | undefined, beatSeconds = BEAT_SECONDS): number {
  if (text === undefined) return DEFAULT_POD_IDLE_SECONDS * 1000;
  const ms = readDuration(text, "--pod-idle-timeout");
  const least = 3 * beatSeconds;
  if (ms < least * 1000) {
    throw new InputError(
      `--pod-idle-timeout expects at least ${least}s (a running exec beats every ${beatSeconds}s), got "${text}"`,
    );
  }
  return ms;
}
