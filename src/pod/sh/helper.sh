# The runner's in-pod helper: runs steps detached from the exec stream and follows them (rendered by
# src/pod/helper-script.ts, installed as /knotless/helper.sh, run as `sh /knotless/helper.sh COMMAND ARGS...`).
# Commands (in full below):
#   run N                 starts step N once, then follows it as `follow N 0 0`.
#   follow N OUT ERR      stdout: frames `O <len>\n<bytes>`, `E <len>\n<bytes>`, `H` (silence), `D O|E <bytes>|?`
#                         (dropped past the bound), then `X <code>` (its exit), `K` (killed) or `N` (never started).
#   kill N GRACE          TERM, then KILL after GRACE seconds, to every process of step N; stdout: `stopped N`, or
#                         `alive N` and exit 1.
#   secrets               stdin: export lines, then the receipt line; stdout: the receipt found (or `none`), the bytes.
#   forget-secrets        removes the secrets file.
#   read-secrets          stdout: the secrets file as `secrets` installed it (for a re-attaching runner; never logged).
#   state                 stdout: `upload done|absent`, `secrets present|absent`, `outputs packed|absent`, then
#                         `step N running|exit CODE|killed` for each step started.
#   pack-outputs          stdout: a tar of OUTPUTS_DIR; stderr: `OUTPUTS_COUNT_TAG <entries>`, last.
#   cache-restore, cache-save, list-files, pack-files: cache.sh.   wrap N (internal): step N's wrapper.
#   Exit 99: an unknown command.
# Settings (variables the renderer sets, never spliced into this text): RUNNER_DIR, WORK_DIR, OUTPUTS_DIR, ENV_DIR,
# RUN_ENV_PATH, CARRIED_ENV_PATH, SECRETS_DIR, SECRETS_PATH, NEED_SECRETS (1: a step needs the secrets), STEP_SHELL
# (the step's shell, its words quoted for eval), OUTPUT_BOUND, SETTLE_QUIET_POLLS, SETTLE_MOST_POLLS,
# STEP_MARK_VARIABLE, STEP_ENV_FILE_VARIABLE, MAX_STEP_ENV_FILE_BYTES, SILENCE_FRAME_SECONDS, SECRETS_RECEIPT_TAG,
# OUTPUTS_COUNT_TAG, UPLOAD_RECEIPT_PATH; beat.sh's and cache.sh's.

# In full:
# The helper's subcommands (argv after `sh /knotless/helper.sh`):
# - `run N`: starts step N once (a second call only follows it), then behaves as `follow N 0 0`.
# - `follow N OUT ERR`: streams step N's output from byte offsets OUT/ERR as frames on stdout until it ends:
#   `O <len>\n<bytes>` (stdout), `E <len>\n<bytes>` (stderr), `H\n` (after SILENCE_FRAME_SECONDS of silence by the
#   clock, so idle stream timeouts do not cut a quiet step), then `X <code>\n` read from the exit file the step's wrapper wrote,
#   or `K\n` when the step was killed (after the output it wrote up to then: a follow after the kill is how a
#   timed-out step's last lines reach the log), or `N\n` when step N was never started. Only `X` reports an exit
#   code: an exec that ends without it never counts as a finished step. Before `X` or `K`, `D O <bytes>` / `D E <bytes>`
#   when step N's stdout / stderr passed the output bound (`D O ?` when the step was stopped before its count ended).
# - `kill N GRACE`: SIGTERM to step N's process group and to every process carrying its mark, SIGKILL to what is
#   left after GRACE seconds; then prints `stopped N` once none is left (`alive N` and exit 1 if one is). The
#   line is the proof: a kill exec that ends without it (dropped, swallowed) did not necessarily run. Idempotent.
# - `secrets`: reads the run's secrets from stdin (`export` lines, then a receipt line: src/pod/secrets-payload.ts)
#   into /knotless-secrets/env (mode 0600, directory 0700, a memory-backed volume), installed only when the stream
#   ended with a whole receipt line; prints the receipt it found (or `none`) and the number of bytes it received, never a value.
# - `forget-secrets`: removes the secrets file; idempotent.
# - `read-secrets`: prints the secrets file (the `export` lines and the receipt `secrets` installed), or nothing and
#   exit 3 when there is none: how a runner that re-attaches to the run (a restart, an adopter) gets the values back
#   to mask them, over the exec's stdout into its memory; the runner never logs that stdout.
# - `state`: what the pod shows of the run's progress, one fact a line: `upload done|absent` (the upload's receipt
#   is there), `secrets present|absent`, `outputs packed|absent` (pack-outputs began: it removed the secrets), then
#   `step N running|exit CODE|killed` for every step started (src/pod/pod-run-state.ts parses it).
# - `pack-outputs`: removes the secrets file (as `forget-secrets`), then writes a tar of /outputs to stdout, then
#   `knotless-outputs-entries <n>` to stderr: the lines `find /outputs ! -type s` prints (see
#   src/transfer/transfer-receipt.ts for why a count, not a checksum). A tar that takes `-b` (GNU tar, bsdtar;
#   busybox's does not) writes 64 KiB records instead of 10 KiB ones: fewer, larger writes into the exec stream
#   (bench/RESULTS.md).
# - `cache-restore PATH...`, `cache-save PATH...`, `list-files DIR...`, `pack-files DIR`: moving caches and artifacts
#   (cache.sh).
# - `wrap N` (internal: what `run` starts) is step N's wrapper.
#
# The step runs in /work, in its own session, stdin from /dev/null, output into files: a dropped exec stream cannot
# stop it, and a reconnecting `follow` loses no byte and repeats none. Each output goes through a fifo to a copier
# (`keep`) that appends it to its file as it comes until the file holds `outputBoundBytes`, then counts the rest into
# FILE.dropped and discards it: the step goes on, and a step printing forever cannot fill the node's disk. The copier
# reads with `dd` without `iflag=fullblock` (output stays live; no read asks for more than the bound leaves, so none
# reads past it: busybox's `head -c` reads ahead through stdio). The wrapper waits for both copiers to end (at most
# ~2 s: a process the step left running may hold its output open) before it writes the exit file. Its wrapper, in a subshell, sources in this
# order (a later file wins for the same name):
#   1. /knotless/env/run.env: the run's variables, then the workflow's environment (RunSettings.env);
#   2. /knotless/env/carried.env: what earlier steps wrote to `$KNOTLESS_ENV`, in step order;
#   3. /knotless/env/N.env: the step's own `env`;
#   4. /knotless-secrets/env: the secrets (a run with secrets refuses to start a step without this file);
# then exports KNOTLESS_STEP_MARK and `KNOTLESS_ENV=/knotless/run/N/env` (an empty file) and `exec`s the configured
# shell's words with the script: `sh -e /knotless/steps/N.sh` by default. Values are never on a command line.
# Once the shell has ended, the wrapper turns `$KNOTLESS_ENV` into `export` lines appended to carried.env (all or
# nothing): `NAME=VALUE` lines and `NAME<<DELIMITER` ... `DELIMITER` blocks (the lines between joined by newlines),
# values byte for byte; empty lines between entries are skipped; a CR before a line's newline is dropped. A line
# it cannot read (neither `=` nor `<<`, a name that is not letters, digits and `_` not starting with a digit or is
# over 255 characters, KNOTLESS_ENV or KNOTLESS_STEP_MARK, `<<` without a delimiter, a block never closed, a NUL)
# is reported on the step's stderr as `knotless: $KNOTLESS_ENV line L: expected ...`, carries nothing, and fails
# a step that had exited 0 with exit code 1. The parsing is linear in the file's size (no shell pattern is matched
# against more than a name's 255 characters; LC_ALL=C).
# The step's wrapper writes its exit code straight into the exit file as one line, last; `follow` takes it only once
# the line is complete (`read` fails without the newline, which comes last), so a partly written code is never read.
# Under `run` the helper is the wrapper's parent: a CHLD trap ends the poll's sleep as soon as the step ends (not under bash, which crashes on one).
# Every subcommand but `wrap` beats while it runs (beat.sh): a runner exec keeps the pod's idle guard
# away, a step left running without a runner does not. `run` and `follow` beat only while their stdin is open too:
# the runner holds it for as long as it follows, so a follow whose runner is gone stops beating.

R=$RUNNER_DIR
B=$OUTPUT_BOUND
size() { stat -c %s "$1" 2>/dev/null || wc -c < "$1"; }
# bash 5.2 as sh crashes (SIGSEGV) when a pending CHLD trap is reset, and garbles a $(...) parsed while one fires:
# under bash the naps only sleep, never woken early by a child's end.
if [ -n "${BASH_VERSION:-}" ]; then arm() { woke=0; }; disarm() { :; }
else arm() { trap 'woke=1' CHLD; woke=0; }; disarm() { trap - CHLD; }; fi
nap() { # SECONDS: sleeps; ends early when a CHLD trap armed by the caller fires (wait returns >128) or has set woke=1
  sleep "$1" > /dev/null 2>&1 & np=$!
  if [ "${woke:-0}" = 0 ]; then wait $np; nr=$?; else nr=129; fi
  disarm
  if [ $nr -gt 128 ]; then kill $np 2>/dev/null; elif [ $nr != 0 ]; then sleep 1; fi
}

start_step() {
  d=$R/run/$1
  [ -d "$R/run" ] || mkdir -p "$R/run"
  mkdir "$d" 2>/dev/null || return 0
  : > "$d/out"; : > "$d/err"; : > "$d/env"
  if command -v setsid >/dev/null 2>&1; then s=setsid; else s=; fi
  (export "$STEP_MARK_VARIABLE=step-$1"; exec $s sh "$R/helper.sh" wrap "$1") < /dev/null > /dev/null 2>&1 &
  echo $! > "$d/pid"
}

keep() { # FIFO FILE: appends FIFO to FILE as it comes until FILE holds $B bytes; the rest counted into FILE.dropped and discarded
  kf=$2
  # shellcheck disable=SC2094 # reads the fifo $1 and appends to $2, never the same file
  {
    while :; do
      kh=$(size "$kf"); kl=$((B - kh))
      [ $kl -gt 0 ] || break
      kb=65536; while [ $kb -gt $kl ]; do kb=$((kb / 2)); done
      dd bs=$kb count=$((kl / kb)) >> "$kf" 2> /dev/null || break # a failed write (a full disk) drops the rest too
      [ "$(size "$kf")" != "$kh" ] || { : > "$kf.done"; return 0; } # nothing read: the end of the output
    done
    : > "$kf.full"
    kt=0 # counted in chunks, each on record, so settle sees a slow drain move
    # shellcheck disable=SC2086 # split on purpose: wc -c pads its count with blanks on some systems
    while kn=$(dd bs=65536 count=16 2> /dev/null | wc -c); set -- $kn; [ "$1" -gt 0 ]; do
      kt=$((kt + $1)); echo $kt > "$kf.drained"
    done
    echo "$kt" > "$kf.count" && mv -f "$kf.count" "$kf.dropped"
  } < "$1"
  : > "$kf.done"
}

settle() { # DIR: waits until both copiers of DIR are done, giving up after a quiet spell or in all (settleSeconds)
  si=0; sq=0; sp=
  while [ $si -lt "$SETTLE_MOST_POLLS" ] && [ $sq -lt "$SETTLE_QUIET_POLLS" ]; do
    [ -e "$1/out.done" ] && [ -e "$1/err.done" ] && return 0
    if [ $si -ge 5 ]; then # the first polls are cheap: most copiers are done by then
      sn=$(stat -c %s "$1/out" "$1/err" 2> /dev/null) || sn="$(size "$1/out") $(size "$1/err")"
      sn="$sn $(cat "$1/out.drained" "$1/err.drained" 2> /dev/null)"
      [ -e "$1/out.full" ] && sn="$sn o"; [ -e "$1/err.full" ] && sn="$sn e"
      if [ "$sn" = "$sp" ]; then sq=$((sq + 1)); else sq=0; sp=$sn; fi
    fi
    arm
    [ -e "$1/out.done" ] && [ -e "$1/err.done" ] && { disarm; return 0; }
    if [ $si -lt 5 ]; then nap 0.01; else nap 0.05; fi # the copiers end within ms of the step's last writer
    si=$((si + 1))
  done
}

wrap() { # N: step N with its environment and shell, then its $KNOTLESS_ENV carried on; the exit file is written last
  d=$R/run/$1
  o=$d/out; e=$d/err
  if mkfifo "$d/out.fifo" "$d/err.fifo" 2> /dev/null; then
    keep "$d/out.fifo" "$d/out" & keep "$d/err.fifo" "$d/err" &
    o=$d/out.fifo; e=$d/err.fifo
  fi
  (
    cd "$WORK_DIR" || exit
    # shellcheck disable=SC2034 # sf is read by the eval below
    if [ "$NEED_SECRETS" = 1 ]; then
      [ -r "$SECRETS_PATH" ] || { echo "knotless: the run's secrets are not in the pod ($SECRETS_PATH is missing)" >&2; exit 125; }
      sf=$SECRETS_PATH
    else sf=; fi
    # From the first sourced file on, only the positional parameters are the helper's: a variable of the run may
    # take any name, the helper's settings' too. $1..$7: the files to source, the two marks, the script; then the shell.
    eval "set -- \"\$RUN_ENV_PATH\" \"\$CARRIED_ENV_PATH\" \"\$ENV_DIR/\$1.env\" \"\$sf\" \"\$STEP_MARK_VARIABLE=step-\$1\" \"\$STEP_ENV_FILE_VARIABLE=\$R/run/\$1/env\" \"\$R/steps/\$1.sh\" $STEP_SHELL"
    # shellcheck source=/dev/null # the run's environment files, written by the runner
    . "$1" && . "$2" && . "$3" && { [ -z "$4" ] || . "$4"; } || exit
    # shellcheck disable=SC2163 # $5 and $6 are NAME=VALUE words, exported as such
    export "$5" "$6"
    command -v "$8" > /dev/null 2>&1 || { echo "knotless: the step's shell $8 is not in this image (PATH=$PATH)" >&2; exit 127; }
    sp=$7; shift 7
    exec "$@" "$sp"
  ) > "$o" 2> "$e" < /dev/null
  rc=$?
  # The fifos go once the copiers have the rest: left behind, they would block whatever later reads the directory (grep -r).
  [ "$o" = "$d/out" ] || { settle "$d"; rm -f "$d/out.fifo" "$d/err.fifo"; }
  if take_env "$d/env" > "$d/env.sh" 2>> "$d/err" && cat "$d/env.sh" >> "$CARRIED_ENV_PATH"; then :; elif [ $rc = 0 ]; then rc=1; fi
  echo $rc > "$d/exit"
}

quote_body() { # VALUE: VALUE for the inside of '...' (each ' as '\''), in one field split: linear in its length
  qv=$1.; qi=$IFS; IFS=\'; set -f
  # shellcheck disable=SC2086 # split on purpose, at each quote (IFS), globbing off (set -f)
  set -- $qv
  IFS=$qi; set +f; qn=0
  for qf; do
    qn=$((qn + 1))
    if [ $qn = $# ]; then printf '%s' "${qf%.}"; else printf "%s'\\\\''" "$qf"; fi
  done
}

env_error() { # LINE WHAT: says what a $KNOTLESS_ENV line should have been
  echo "knotless: \$$STEP_ENV_FILE_VARIABLE line $1: expected $2" >&2
  return 1
}

take_env() { # FILE: its NAME=VALUE lines and NAME<<DELIMITER blocks as export lines on stdout; false if one is malformed
  [ -s "$1" ] || return 0
  LC_ALL=C
  sz=$(wc -c < "$1")
  if [ "$sz" -gt "$MAX_STEP_ENV_FILE_BYTES" ]; then
    echo "knotless: \$$STEP_ENV_FILE_VARIABLE is $sz bytes: expected at most $MAX_STEP_ENV_FILE_BYTES (1 MiB; Linux refuses to start a process whose one variable passes 128 KiB, or whose whole environment passes ~2 MiB)" >&2
    return 1
  fi
  if [ "$(tr -d '\000' < "$1" | wc -c)" != "$sz" ]; then
    ln=$(tr -cd '\000\n' < "$1" | tr '\000' Z | { n=1; while IFS= read -r x || [ -n "$x" ]; do case $x in *Z*) break ;; esac; n=$((n + 1)); done; echo $n; })
    env_error "$ln" "text, found a NUL byte (no environment variable can hold one)"; return
  fi
  cr=$(printf '\r'); nl='
'
  n=0; h=
  while IFS= read -r l || [ -n "$l" ]; do
    n=$((n + 1)); l=${l%"$cr"}
    if [ -n "$h" ]; then
      if [ "$l" = "$t" ]; then printf "'\n"; h=; else printf '%s' "$sep"; quote_body "$l"; sep=$nl; fi
      continue
    fi
    [ -n "$l" ] || continue
    case $l in *=*|*"<<"*) ;; *) env_error $n 'NAME=VALUE or NAME<<DELIMITER, found neither "=" nor "<<"'; return ;; esac
    k=${l%%=*}; k=${k%%"<"*}
    [ ${#k} -le 255 ] || { env_error $n "a variable name of at most 255 characters, found one of ${#k}"; return; }
    r=${l#"$k"}
    case $k in
      "") env_error $n 'a variable name before "=" or "<<", found none'; return ;;
      [0123456789]*|*[!ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_]*)
        env_error $n "a variable name of letters, digits and _ that does not start with a digit, found \"$k\""; return ;;
      "$STEP_ENV_FILE_VARIABLE"|"$STEP_MARK_VARIABLE") env_error $n "a variable other than $k, which the runner sets for every step"; return ;;
    esac
    case $r in
      =*) printf "export %s='" "$k"; quote_body "${r#=}"; printf "'\n" ;;
      "<<"*)
        t=${r#"<<"}; h=$k; hn=$n; sep=
        [ -n "$t" ] || { env_error $n "a delimiter after \"$k<<\", found none"; return; }
        printf "export %s='" "$k" ;;
      *) env_error $n "\"=\" or \"<<\" after the name $k, found \"<\""; return ;;
    esac
  done < "$1"
  [ -z "$h" ] || env_error "$hn" "a line $t to end the value of $h begun here, found the end of the file"
}

forget_secrets() { rm -f "$SECRETS_PATH" "$SECRETS_DIR/.incoming"; }

take_secrets() { # stdin: export lines, then the receipt line; installs them only whole; prints the receipt found and the bytes
  umask 077
  [ -d "$SECRETS_DIR" ] || mkdir -p "$SECRETS_DIR" || exit
  chmod 700 "$SECRETS_DIR" || exit
  f=$SECRETS_DIR/.incoming
  cat > "$f" || { rm -f "$f"; exit 1; }
  got=$(wc -c < "$f"); last=$(tail -n 1 "$f")
  [ -z "$(tail -c 1 "$f")" ] || last=none # the receipt line is whole only with its newline, the stream's last byte
  case $last in "$SECRETS_RECEIPT_TAG "*) mv -f "$f" "$SECRETS_PATH" || exit ;; *) last=none; rm -f "$f" ;; esac
  printf '%s\n%d\n' "$last" "$got"
}

send() { # tag file offset size
  n=$(($4 - $3))
  [ "$n" -gt 0 ] || return 1
  printf '%s %d\n' "$1" "$n"
  if [ "$3" = 0 ]; then head -c "$n" "$2"; else tail -c +$(($3 + 1)) "$2" | head -c "$n"; fi
}

dropped() { # TAG FILE: says how much of FILE's stream was dropped past the bound, if any was
  if read -r dn 2> /dev/null < "$2.dropped"; then [ "$dn" = 0 ] || printf 'D %s %s\n' "$1" "$dn"
  elif [ -e "$2.full" ]; then printf 'D %s ?\n' "$1"; fi
}

follow() {
  d=$R/run/$1; oo=$2; eo=$3
  [ -d "$d" ] || { printf 'N\n'; exit 0; }
  delay=0.005; quiet_since=
  while :; do
    fin=0; read -r code 2>/dev/null < "$d/exit" && fin=1
    killed=0; [ -f "$d/killed" ] && killed=1
    if [ -s "$d/out" ] || [ -s "$d/err" ]; then
      sizes=$(stat -c %s "$d/out" "$d/err" 2>/dev/null) || sizes="$(size "$d/out") $(size "$d/err")"
    else sizes="0 0"; fi
    # shellcheck disable=SC2086 # split on purpose: the two sizes
    set -- $sizes; sent=0
    if send O "$d/out" "$oo" "$1"; then oo=$1; sent=1; fi
    if send E "$d/err" "$eo" "$2"; then eo=$2; sent=1; fi
    [ $killed = 1 ] && { dropped O "$d/out"; dropped E "$d/err"; printf 'K\n'; exit 0; }
    if [ $fin = 1 ]; then dropped O "$d/out"; dropped E "$d/err"; printf 'X %s\n' "$code"; exit 0; fi
    if [ $sent = 1 ]; then delay=0.01; quiet_since=; else
      case $delay in 0.005) delay=0.01 ;; 0.01) delay=0.02 ;; 0.02) delay=0.05 ;; 0.05) delay=0.1 ;; 0.1) delay=0.2 ;; esac
      now=$(date +%s); [ -n "$quiet_since" ] || quiet_since=$now
      [ $((now - quiet_since)) -ge "$SILENCE_FRAME_SECONDS" ] && { printf 'H\n'; quiet_since=$now; }
    fi
    arm
    read -r code 2>/dev/null < "$d/exit" && { disarm; continue; }
    nap $delay
  done
}

signal_step() { # SIGNAL N: signals every live process of step N (0 only looks); false when none is left
  sig=$1; n=$2; pg=$(cat "$R/run/$n/pid" 2>/dev/null); found=1
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = $$ ] && continue
    st=$(cat "$p/stat" 2>/dev/null) || continue
    # shellcheck disable=SC2086 # split on purpose: the fields of /proc/PID/stat after the command name
    set -- ${st##*) }
    [ "$1" = Z ] && continue
    if [ "$3" = "$pg" ] || tr '\0' '\n' < "$p/environ" 2>/dev/null | grep -qx "$STEP_MARK_VARIABLE=step-$n"; then
      [ "$sig" = 0 ] || kill -"$sig" "$pid" 2>/dev/null
      found=0
    fi
  done
  return $found
}

kill_step() { # N GRACE: says "stopped N" once no process of step N is left, "alive N" (exit 1) if one is
  # A kill can come before the step's own exec reached the pod (a timeout on a slow API server): making its directory
  # first means that exec's start_step finds it taken and never starts the step, and its follow reports K.
  mkdir -p "$R/run/$1" && : > "$R/run/$1/killed" || exit
  if signal_step TERM "$1"; then
    i=0
    while [ $i -lt $(($2 * 10)) ] && signal_step 0 "$1"; do nap 0.1; i=$((i + 1)); done
    if signal_step KILL "$1"; then
      i=0
      while [ $i -lt 20 ] && signal_step 0 "$1"; do nap 0.1; i=$((i + 1)); done
    fi
  fi
  signal_step 0 "$1" && { echo "alive $1"; return 1; }
  echo "stopped $1"
}

run_state() { # the facts `state` prints
  if [ -e "$UPLOAD_RECEIPT_PATH" ]; then echo "upload done"; else echo "upload absent"; fi
  if [ -e "$SECRETS_PATH" ]; then echo "secrets present"; else echo "secrets absent"; fi
  if [ -e "$R/outputs-count" ]; then echo "outputs packed"; else echo "outputs absent"; fi
  for d in "$R"/run/*; do
    [ -d "$d" ] || continue
    n=${d##*/}
    if read -r code 2>/dev/null < "$d/exit"; then echo "step $n exit $code"
    elif [ -f "$d/killed" ]; then echo "step $n killed"
    else echo "step $n running"; fi
  done
}

read_secrets() { [ -r "$SECRETS_PATH" ] || exit 3; cat "$SECRETS_PATH"; }

pack_outputs() { # counted while tar packs, not after it: the count's walk is off the download's critical path
  forget_secrets
  find "$OUTPUTS_DIR" ! -type s | wc -l > "$R/outputs-count" & counting=$!
  if tar -b 128 -cf - -T /dev/null > /dev/null 2>&1; then set -- -b 128; else set --; fi
  tar "$@" -cf - -C "$OUTPUTS_DIR" .
  rc=$?
  wait $counting
  echo "$OUTPUTS_COUNT_TAG $(cat "$R/outputs-count")" >&2
  exit $rc
}

case $1 in
  wrap) ;;
  run|follow) beat_while_runner_holds ;;
  *) beat_while_exec_runs ;;
esac
case $1 in
  run) start_step "$2"; follow "$2" 0 0 ;;
  follow) follow "$2" "$3" "$4" ;;
  kill) kill_step "$2" "$3" ;;
  wrap) wrap "$2" ;;
  secrets) take_secrets ;;
  forget-secrets) forget_secrets ;;
  read-secrets) read_secrets ;;
  state) run_state ;;
  pack-outputs) pack_outputs ;;
  cache-restore) shift; cache_restore "$@" ;;
  cache-save) shift; cache_save "$@" ;;
  list-files) shift; list_files "$@" ;;
  pack-files) pack_files "$2" ;;
  *) echo "knotless helper: unknown command $1" >&2; exit 99 ;;
esac
