// The run pod's dead man's switch: PID 1's idle guard, and the beat every runner exec keeps on a clock while it runs.
import { formatDuration } from "../config/duration.js";
import { POD_HEARTBEAT_PATH } from "./paths.js";

/** The run container's exit code when its idle guard stopped it (EX_TEMPFAIL): how the runner tells it from a crash. */
export const IDLE_EXIT_CODE = 75;
/** The default of `--pod-idle-timeout`. */
export const DEFAULT_POD_IDLE_SECONDS = 600;
/** Seconds between two beats of a running exec. */
export const BEAT_SECONDS = 5;
/** The least `--pod-idle-timeout` takes: three beats, so one late beat (a loaded node) never trips the guard. */
export const MIN_POD_IDLE_SECONDS = 3 * BEAT_SECONDS;
/** Where the kubelet reads a container's termination message (the Kubernetes default path). */
const TERMINATION_LOG = "/dev/termination-log";

/**
 * Shell for the start of every runner exec into the run pod (the helper, the upload, the PVC cache scripts): one beat
 * now, then one every BEAT_SECONDS for as long as the exec's shell (`$$`, also inside the subshell) lives. Liveness is
 * the exec's process, never its output or silence: a step that prints steadily and one that is silent both keep the
 * pod, and once the runner is gone (its exec streams closed, their processes ended) the beats stop.
 */
export function buildBeatWhileExecRuns(beatSeconds = BEAT_SECONDS): string {
  return (
    `{ echo > ${POD_HEARTBEAT_PATH}; } 2>/dev/null; ` +
    `(while sleep ${beatSeconds} && kill -0 $$ 2>/dev/null; do echo > ${POD_HEARTBEAT_PATH}; done) < /dev/null > /dev/null 2>&1 &`
  );
}

/** The words the run, `list` and `gc` use for a pod its guard stopped. */
export function describeIdleStop(idleSeconds: number | undefined): string {
  const after = idleSeconds === undefined ? "" : ` after ${idleSeconds % 60 === 0 ? `${idleSeconds / 60}m` : formatDuration(idleSeconds * 1000)}`;
  return `the pod stopped itself${after} without runner activity (its runner is gone, or could not reach it)`;
}

/**
 * A POSIX sh script for PID 1 of the run container.
 * - `sleep & wait` lets the TERM trap fire at once, so the pod stops within its grace period.
 * - Dead man's switch: every runner exec refreshes the heartbeat file on a clock while it runs; when neither it nor
 *   the start is newer than `idleSeconds`, the runner is gone, so the container exits 75 with the reason as its
 *   termination message, the Job finishes and the cluster can scale back to zero instead of paying for a node.
 */
export function buildKeepAliveScript(idleSeconds: number): string {
  const message = describeIdleStop(idleSeconds);
  const pollSeconds = Math.min(5, Math.max(1, Math.floor(idleSeconds / 4)));
  return [
    "trap 'exit 0' TERM INT",
    "start=$(date +%s)",
    "while :; do",
    `  sleep ${pollSeconds} & wait $!`,
    "  now=$(date +%s)",
    `  last=$(stat -c %Y ${POD_HEARTBEAT_PATH} 2>/dev/null || echo "$start")`,
    `  if [ $((now - last)) -gt ${idleSeconds} ]; then`,
    `    echo "knotless: ${message}" >&2`,
    `    echo "knotless: ${message}" > ${TERMINATION_LOG} 2>/dev/null`,
    `    exit ${IDLE_EXIT_CODE}`,
    "  fi",
    "done",
  ].join("\n");
}
