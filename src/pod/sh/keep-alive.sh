# PID 1 of the run container (rendered by buildKeepAliveScript in src/pod/keep-alive.ts): the pod's dead man's switch.
# Waits in the background (`sleep & wait`) so the TERM trap fires at once: exit 0 on TERM or INT. When neither the
# heartbeat file (every runner exec beats it while it runs) nor the start is newer than IDLE_SECONDS, says why on
# stderr and as the termination message, and exits IDLE_EXIT_CODE.
# Settings: IDLE_SECONDS, POLL_SECONDS, IDLE_MESSAGE, HEARTBEAT_PATH, TERMINATION_LOG, IDLE_EXIT_CODE.
trap 'exit 0' TERM INT
start=$(date +%s)
while :; do
  sleep "$POLL_SECONDS" & wait $!
  now=$(date +%s)
  last=$(stat -c %Y "$HEARTBEAT_PATH" 2>/dev/null || echo "$start")
  if [ $((now - last)) -gt "$IDLE_SECONDS" ]; then
    echo "knotless: $IDLE_MESSAGE" >&2
    echo "knotless: $IDLE_MESSAGE" > "$TERMINATION_LOG" 2>/dev/null
    exit "$IDLE_EXIT_CODE"
  fi
done
