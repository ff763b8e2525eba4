// The run container's main process: sleeps until SIGTERM, or exits when the runner has been silent too long.
import { POD_HEARTBEAT_PATH } from "./paths.js";

/**
 * A POSIX sh script for PID 1 of the run container.
 * - `sleep & wait` lets the TERM trap fire at once, so the pod stops within its grace period.
 * - Dead man's switch: every runner exec touches the heartbeat file; when neither it nor the start is newer than
 *   `idleSeconds`, the runner host is gone, so the container exits (non-zero, reason in the log), the Job
 *   finishes and the cluster can scale back to zero instead of paying for a node until the deadline.
 */
export function buildKeepAliveScript(idleSeconds: number): string {
  return [
    "trap 'exit 0' TERM INT",
    "start=$(date +%s)",
    "while :; do",
    "  sleep 5 & wait $!",
    "  now=$(date +%s)",
    `  last=$(stat -c %Y ${POD_HEARTBEAT_PATH} 2>/dev/null || echo "$start")`,
    `  if [ $((now - last)) -gt ${idleSeconds} ]; then`,
    `    echo "knotless: no runner activity for ${idleSeconds}s, the runner is gone; stopping" >&2`,
    "    exit 75",
    "  fi",
    "done",
  ].join("\n");
}
