# The beat of a runner exec into the run pod (sourced by the helper, the upload and the PVC cache commands): see
# src/pod/keep-alive.ts. Liveness is the exec, never its output or silence.
# Settings: HEARTBEAT_PATH (the file PID 1's idle guard watches), BEAT_SECONDS (between two beats).
#
# beat_while_exec_runs: one beat now, then one every BEAT_SECONDS for as long as this shell ($$, also inside a
# subshell) lives.
# beat_while_runner_holds: the same, and the beats also stop once this exec's stdin ends: the runner holds it open for
# as long as it follows, and the cluster closes it when the runner dies or its stream is cut (the follow itself may
# live on). Background jobs get /dev/null as stdin, so the watcher reads the exec's stdin through fd 3.
# (Comments stay up here: the renderer drops this opening block, so the programs on a command line carry none.)

beat_while_exec_runs() {
  { echo > "$HEARTBEAT_PATH"; } 2>/dev/null
  (while sleep "$BEAT_SECONDS" && kill -0 $$ 2>/dev/null; do echo > "$HEARTBEAT_PATH"; done) < /dev/null > /dev/null 2>&1 &
}

beat_while_runner_holds() {
  { echo > "$HEARTBEAT_PATH"; } 2>/dev/null; exec 3<&0
  (while sleep "$BEAT_SECONDS" && kill -0 $$ 2>/dev/null; do echo > "$HEARTBEAT_PATH"; done) < /dev/null > /dev/null 2>&1 & knotless_beater=$!
  (cat <&3 > /dev/null 2>&1; kill $knotless_beater 2>/dev/null) < /dev/null > /dev/null 2>&1 &
  exec 3<&-
}
