// The runner's in-pod helper: a POSIX sh script that runs steps detached from the exec stream and follows them.
import { DEFAULT_STEP_SHELL } from "../input/step-environment.js";
import { OUTPUTS_COUNT_TAG, UPLOAD_RECEIPT_ARCHIVE_PATH } from "../transfer/transfer-receipt.js";
import { quoteShellWord } from "./env-file.js";
import {
  POD_CARRIED_ENV_PATH,
  POD_ENV_DIR,
  POD_OUTPUTS_DIR,
  POD_RUN_ENV_PATH,
  POD_RUNNER_DIR,
  POD_SECRETS_DIR,
  POD_SECRETS_PATH,
  POD_STEPS_DIR,
  POD_WORK_DIR,
} from "./paths.js";
import { buildBeatWhileExecRuns, buildBeatWhileRunnerHolds } from "./keep-alive.js";
import { SECRETS_RECEIPT_TAG } from "./secrets-payload.js";
import { DEFAULT_MAX_LOG_BYTES } from "../events/output-budget.js";
import { CACHE_HELPER_DISPATCH, CACHE_HELPER_FUNCTIONS } from "./cache-script.js";

/** The environment variable that marks every process of step N, so a timeout can find them all. */
export const STEP_MARK_VARIABLE = "KNOTLESS_STEP_MARK";

/** The environment variable naming the file a step may append variables for the later steps to. */
export const STEP_ENV_FILE_VARIABLE = "KNOTLESS_ENV";
/** The most a step may write to $KNOTLESS_ENV (1 MiB): more could not reach a later step's process anyway. */
export const MAX_STEP_ENV_FILE_BYTES = 1024 * 1024;

/** Seconds of a step's silence after which `follow` sends an `H` frame, so idle stream timeouts do not cut the exec. */
export const SILENCE_FRAME_SECONDS = 10;

/** Path of step N's script in the pod (N counts from 0). */
export function podStepScriptPath(index: number): string {
  return `${POD_RUNNER_DIR}/steps/${index}.sh`;
}

/** Path of step N's own environment (`export` lines) in the pod. */
export function podStepEnvPath(index: number): string {
  return `${POD_ENV_DIR}/${index}.env`;
}

/** Path of the file `$KNOTLESS_ENV` names for step N. */
export function podStepEnvFilePath(index: number): string {
  return `${POD_RUNNER_DIR}/run/${index}/env`;
}

/** What the helper is generated for: the run's settings that shape how every step starts. */
export interface HelperOptions {
  /** The steps' shell as words; default `sh -e`. */
  readonly shell?: readonly string[];
  /** The run has secrets: a step refuses to start without them (they are delivered after the upload). */
  readonly secrets?: boolean;
  /** Seconds between the beats of a running helper call; default BEAT_SECONDS (tests shorten it). */
  readonly beatSeconds?: number;
  /**
   * Most bytes of each of a step's two output files in the pod (`maxLogBytes`: no log keeps more of the run's output
   * anyway); default DEFAULT_MAX_LOG_BYTES. The rest is read, counted and discarded, so the step never blocks on it.
   */
  readonly outputBoundBytes?: number;
  /**
   * How long a step's end waits for its output copiers: it gives up after `quiet` seconds in which they moved nothing
   * or `most` seconds in all (a process the step left running holds its output open). Default SETTLE_SECONDS.
   */
  readonly settleSeconds?: { readonly quiet: number; readonly most: number };
}

/** A loaded node slows the copiers without stopping them, hence a window of no progress rather than a fixed wait. */
export const SETTLE_SECONDS = { quiet: 2, most: 10 } as const;
/** settle polls every 50 ms once past its first few 10 ms polls. */
const SETTLE_POLLS_PER_SECOND = 20;

/** Step N's stdout past the pod's bound: `D O <bytes>` (or `D O ?` when the step was stopped before the count ended); `D E` for stderr. */
export const DROPPED_FRAME_TAG = "D";

/**
 * The helper's subcommands (argv after `sh /knotless/helper.sh`):
 * - `run N`: starts step N once (a second call only follows it), then behaves as `follow N 0 0`.
 * - `follow N OUT ERR`: streams step N's output from byte offsets OUT/ERR as frames on stdout until it ends:
 *   `O <len>\n<bytes>` (stdout), `E <len>\n<bytes>` (stderr), `H\n` (after SILENCE_FRAME_SECONDS of silence by the
 *   clock, so idle stream timeouts do not cut a quiet step), then `X <code>\n` read from the exit file the step's wrapper wrote,
 *   or `K\n` when the step was killed (after the output it wrote up to then: a follow after the kill is how a
 *   timed-out step's last lines reach the log), or `N\n` when step N was never started. Only `X` reports an exit
 *   code: an exec that ends without it never counts as a finished step. Before `X` or `K`, `D O <bytes>` / `D E <bytes>`
 *   when step N's stdout / stderr passed the output bound (`D O ?` when the step was stopped before its count ended).
 * - `kill N GRACE`: SIGTERM to step N's process group and to every process carrying its mark, SIGKILL to what is
 *   left after GRACE seconds; then prints `stopped N` once none is left (`alive N` and exit 1 if one is). The
 *   line is the proof: a kill exec that ends without it (dropped, swallowed) did not necessarily run. Idempotent.
 * - `secrets`: reads the run's secrets from stdin (`export` lines, then a receipt line: src/pod/secrets-payload.ts)
 *   into /knotless-secrets/env (mode 0600, directory 0700, a memory-backed volume), installed only when the stream
 *   ended with a whole receipt line; prints the receipt it found (or `none`) and the number of bytes it received, never a value.
 * - `forget-secrets`: removes the secrets file; idempotent.
 * - `pack-outputs`: removes the secrets file (as `forget-secrets`), then writes a tar of /outputs to stdout, then
 *   `knotless-outputs-entries <n>` to stderr: the lines `find /outputs ! -type s` prints (see
 *   src/transfer/transfer-receipt.ts for why a count, not a checksum). A tar that takes `-b` (GNU tar, bsdtar;
 *   busybox's does not) writes 64 KiB records instead of 10 KiB ones: fewer, larger writes into the exec stream
 *   (bench/RESULTS.md).
 * - `cache-restore PATH...`, `cache-save PATH...`, `list-files DIR...`, `pack-files DIR`: moving caches and artifacts
 *   (src/pod/cache-script.ts).
 * - `wrap N` (internal: what `run` starts) is step N's wrapper.
 *
 * The step runs in /work, in its own session, stdin from /dev/null, output into files: a dropped exec stream cannot
 * stop it, and a reconnecting `follow` loses no byte and repeats none. Each output goes through a fifo to a copier
 * (`keep`) that appends it to its file as it comes until the file holds `outputBoundBytes`, then counts the rest into
 * FILE.dropped and discards it: the step goes on, and a step printing forever cannot fill the node's disk. The copier
 * reads with `dd` without `iflag=fullblock` (output stays live; no read asks for more than the bound leaves, so none
 * reads past it: busybox's `head -c` reads ahead through stdio). The wrapper waits for both copiers to end (at most
 * ~2 s: a process the step left running may hold its output open) before it writes the exit file. Its wrapper, in a subshell, sources in this
 * order (a later file wins for the same name):
 *   1. /knotless/env/run.env: the run's variables, then the workflow's environment (ExecutorSettings.env);
 *   2. /knotless/env/carried.env: what earlier steps wrote to `$KNOTLESS_ENV`, in step order;
 *   3. /knotless/env/N.env: the step's own `env`;
 *   4. /knotless-secrets/env: the secrets (a run with secrets refuses to start a step without this file);
 * then exports KNOTLESS_STEP_MARK and `KNOTLESS_ENV=/knotless/run/N/env` (an empty file) and `exec`s the configured
 * shell's words with the script: `sh -e /knotless/steps/N.sh` by default. Values are never on a command line.
 * Once the shell has ended, the wrapper turns `$KNOTLESS_ENV` into `export` lines appended to carried.env (all or
 * nothing): `NAME=VALUE` lines and `NAME<<DELIMITER` ... `DELIMITER` blocks (the lines between joined by newlines),
 * values byte for byte; empty lines between entries are skipped; a CR before a line's newline is dropped. A line
 * it cannot read (neither `=` nor `<<`, a name that is not letters, digits and `_` not starting with a digit or is
 * over 255 characters, KNOTLESS_ENV or KNOTLESS_STEP_MARK, `<<` without a delimiter, a block never closed, a NUL)
 * is reported on the step's stderr as `knotless: $KNOTLESS_ENV line L: expected ...`, carries nothing, and fails
 * a step that had exited 0 with exit code 1. The parsing is linear in the file's size (no shell pattern is matched
 * against more than a name's 255 characters; LC_ALL=C).
 * The step's wrapper writes its exit code straight into the exit file as one line, last; `follow` takes it only once
 * the line is complete (`read` fails without the newline, which comes last), so a partly written code is never read.
 * Under `run` the helper is the wrapper's parent: a CHLD trap ends the poll's sleep as soon as the step ends (not under bash, which crashes on one).
 * Every subcommand but `wrap` beats while it runs (src/pod/keep-alive.ts): a runner exec keeps the pod's idle guard
 * away, a step left running without a runner does not. `run` and `follow` beat only while their stdin is open too:
 * the runner holds it for as long as it follows, so a follow whose runner is gone stops beating.
 */
export function buildHelperScript(options: HelperOptions = {}): string {
  const shell = options.shell ?? DEFAULT_STEP_SHELL;
  const shellWords = shell.map(quoteShellWord).join(" ");
  const needSecrets = options.secrets
    ? `[ -r ${POD_SECRETS_PATH} ] || { echo "knotless: the run's secrets are not in the pod (${POD_SECRETS_PATH} is missing)" >&2; exit 125; }\n    `
    : "";
  const sourceSecrets = options.secrets ? ` && . ${POD_SECRETS_PATH}` : "";
  const bound = options.outputBoundBytes ?? DEFAULT_MAX_LOG_BYTES;
  if (!Number.isSafeInteger(bound) || bound < 0) throw new RangeError(`the output bound must be a whole number of bytes >= 0, got ${bound}`);
  const settle = options.settleSeconds ?? SETTLE_SECONDS;
  const [quietPolls, mostPolls] = [settle.quiet, settle.most].map((seconds) => Math.max(1, Math.round(seconds * SETTLE_POLLS_PER_SECOND)));
  return `#!/bin/sh
# knotless in-pod helper (generated by knotless-runner-k8s; see src/pod/helper-script.ts)
R=${POD_RUNNER_DIR}
B=${bound}
size() { stat -c %s "$1" 2>/dev/null || wc -c < "$1"; }
# bash 5.2 as sh crashes (SIGSEGV) when a pending CHLD trap is reset, and garbles a $(...) parsed while one fires:
# under bash the naps only sleep, never woken early by a child's end.
if [ -n "\${BASH_VERSION:-}" ]; then arm() { woke=0; }; disarm() { :; }
else arm() { trap 'woke=1' CHLD; woke=0; }; disarm() { trap - CHLD; }; fi
nap() { # SECONDS: sleeps; ends early when a CHLD trap armed by the caller fires (wait returns >128) or has set woke=1
  sleep "$1" > /dev/null 2>&1 & np=$!
  if [ "\${woke:-0}" = 0 ]; then wait $np; nr=$?; else nr=129; fi
  disarm
  if [ $nr -gt 128 ]; then kill $np 2>/dev/null; elif [ $nr != 0 ]; then sleep 1; fi
}

start_step() {
  d=$R/run/$1
  [ -d $R/run ] || mkdir -p $R/run
  mkdir "$d" 2>/dev/null || return 0
  : > "$d/out"; : > "$d/err"; : > "$d/env"
  if command -v setsid >/dev/null 2>&1; then s=setsid; else s=; fi
  ${STEP_MARK_VARIABLE}="step-$1" $s sh "$R/helper.sh" wrap "$1" < /dev/null > /dev/null 2>&1 &
  echo $! > "$d/pid"
}

keep() { # FIFO FILE: appends FIFO to FILE as it comes until FILE holds $B bytes; the rest counted into FILE.dropped and discarded
  kf=$2
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
    while kn=$(dd bs=65536 count=16 2> /dev/null | wc -c); set -- $kn; [ "$1" -gt 0 ]; do
      kt=$((kt + $1)); echo $kt > "$kf.drained"
    done
    echo "$kt" > "$kf.count" && mv -f "$kf.count" "$kf.dropped"
  } < "$1"
  : > "$kf.done"
}

settle() { # DIR: waits until both copiers of DIR are done, giving up after a quiet spell or in all (settleSeconds)
  si=0; sq=0; sp=
  while [ $si -lt ${mostPolls} ] && [ $sq -lt ${quietPolls} ]; do
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
    cd ${POD_WORK_DIR} || exit
    ${needSecrets}. ${POD_RUN_ENV_PATH} && . ${POD_CARRIED_ENV_PATH} && . ${POD_ENV_DIR}/"$1".env${sourceSecrets} || exit
    export ${STEP_MARK_VARIABLE}="step-$1" ${STEP_ENV_FILE_VARIABLE}="${POD_RUNNER_DIR}/run/$1/env"
    command -v ${quoteShellWord(shell[0]!)} > /dev/null 2>&1 || { echo "knotless: the step's shell "${quoteShellWord(shell[0]!)}" is not in this image (PATH=$PATH)" >&2; exit 127; }
    exec ${shellWords} "${POD_RUNNER_DIR}/steps/$1.sh"
  ) > "$o" 2> "$e" < /dev/null
  rc=$?
  # The fifos go once the copiers have the rest: left behind, they would block whatever later reads the directory (grep -r).
  [ "$o" = "$d/out" ] || { settle "$d"; rm -f "$d/out.fifo" "$d/err.fifo"; }
  if take_env "$d/env" > "$d/env.sh" 2>> "$d/err" && cat "$d/env.sh" >> ${POD_CARRIED_ENV_PATH}; then :; elif [ $rc = 0 ]; then rc=1; fi
  echo $rc > "$d/exit"
}

quote_body() { # VALUE: VALUE for the inside of '...' (each ' as '\\''), in one field split: linear in its length
  qv=$1.; qi=$IFS; IFS=\\'; set -f
  set -- $qv
  IFS=$qi; set +f; qn=0
  for qf; do
    qn=$((qn + 1))
    if [ $qn = $# ]; then printf '%s' "\${qf%.}"; else printf "%s'\\\\\\\\''" "$qf"; fi
  done
}

env_error() { # LINE WHAT: says what a $KNOTLESS_ENV line should have been
  echo "knotless: \\$${STEP_ENV_FILE_VARIABLE} line $1: expected $2" >&2
  return 1
}

take_env() { # FILE: its NAME=VALUE lines and NAME<<DELIMITER blocks as export lines on stdout; false if one is malformed
  [ -s "$1" ] || return 0
  LC_ALL=C
  sz=$(wc -c < "$1")
  if [ $sz -gt ${MAX_STEP_ENV_FILE_BYTES} ]; then
    echo "knotless: \\$${STEP_ENV_FILE_VARIABLE} is $sz bytes: expected at most ${MAX_STEP_ENV_FILE_BYTES} (1 MiB; Linux refuses to start a process whose one variable passes 128 KiB, or whose whole environment passes ~2 MiB)" >&2
    return 1
  fi
  if [ "$(tr -d '\\000' < "$1" | wc -c)" != "$sz" ]; then
    ln=$(tr -cd '\\000\\n' < "$1" | tr '\\000' Z | { n=1; while IFS= read -r x || [ -n "$x" ]; do case $x in *Z*) break ;; esac; n=$((n + 1)); done; echo $n; })
    env_error "$ln" "text, found a NUL byte (no environment variable can hold one)"; return
  fi
  cr=$(printf '\\r'); nl='
'
  n=0; h=
  while IFS= read -r l || [ -n "$l" ]; do
    n=$((n + 1)); l=\${l%"$cr"}
    if [ -n "$h" ]; then
      if [ "$l" = "$t" ]; then printf "'\\n"; h=; else printf '%s' "$sep"; quote_body "$l"; sep=$nl; fi
      continue
    fi
    [ -n "$l" ] || continue
    case $l in *=*|*"<<"*) ;; *) env_error $n 'NAME=VALUE or NAME<<DELIMITER, found neither "=" nor "<<"'; return ;; esac
    k=\${l%%=*}; k=\${k%%"<"*}
    [ \${#k} -le 255 ] || { env_error $n "a variable name of at most 255 characters, found one of \${#k}"; return; }
    r=\${l#"$k"}
    case $k in
      "") env_error $n 'a variable name before "=" or "<<", found none'; return ;;
      [0123456789]*|*[!ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_]*)
        env_error $n "a variable name of letters, digits and _ that does not start with a digit, found \\"$k\\""; return ;;
      ${STEP_ENV_FILE_VARIABLE}|${STEP_MARK_VARIABLE}) env_error $n "a variable other than $k, which the runner sets for every step"; return ;;
    esac
    case $r in
      =*) printf "export %s='" "$k"; quote_body "\${r#=}"; printf "'\\n" ;;
      "<<"*)
        t=\${r#"<<"}; h=$k; hn=$n; sep=
        [ -n "$t" ] || { env_error $n "a delimiter after \\"$k<<\\", found none"; return; }
        printf "export %s='" "$k" ;;
      *) env_error $n "\\"=\\" or \\"<<\\" after the name $k, found \\"<\\""; return ;;
    esac
  done < "$1"
  [ -z "$h" ] || env_error $hn "a line $t to end the value of $h begun here, found the end of the file"
}

forget_secrets() { rm -f ${POD_SECRETS_PATH} ${POD_SECRETS_DIR}/.incoming; }

take_secrets() { # stdin: export lines, then the receipt line; installs them only whole; prints the receipt found and the bytes
  umask 077
  [ -d ${POD_SECRETS_DIR} ] || mkdir -p ${POD_SECRETS_DIR} || exit
  chmod 700 ${POD_SECRETS_DIR} || exit
  f=${POD_SECRETS_DIR}/.incoming
  cat > $f || { rm -f $f; exit 1; }
  got=$(wc -c < $f); last=$(tail -n 1 $f)
  [ -z "$(tail -c 1 $f)" ] || last=none # the receipt line is whole only with its newline, the stream's last byte
  case $last in "${SECRETS_RECEIPT_TAG} "*) mv -f $f ${POD_SECRETS_PATH} || exit ;; *) last=none; rm -f $f ;; esac
  printf '%s\\n%d\\n' "$last" $got
}

send() { # tag file offset size
  n=$(($4 - $3))
  [ "$n" -gt 0 ] || return 1
  printf '%s %d\\n' "$1" "$n"
  if [ "$3" = 0 ]; then head -c "$n" "$2"; else tail -c +$(($3 + 1)) "$2" | head -c "$n"; fi
}

dropped() { # TAG FILE: says how much of FILE's stream was dropped past the bound, if any was
  if read -r dn 2> /dev/null < "$2.dropped"; then [ "$dn" = 0 ] || printf 'D %s %s\\n' "$1" "$dn"
  elif [ -e "$2.full" ]; then printf 'D %s ?\\n' "$1"; fi
}

follow() {
  d=$R/run/$1; oo=$2; eo=$3
  [ -d "$d" ] || { printf 'N\\n'; exit 0; }
  delay=0.005; quiet_since=
  while :; do
    fin=0; read -r code 2>/dev/null < "$d/exit" && fin=1
    killed=0; [ -f "$d/killed" ] && killed=1
    if [ -s "$d/out" ] || [ -s "$d/err" ]; then
      sizes=$(stat -c %s "$d/out" "$d/err" 2>/dev/null) || sizes="$(size "$d/out") $(size "$d/err")"
    else sizes="0 0"; fi
    set -- $sizes; sent=0
    if send O "$d/out" "$oo" "$1"; then oo=$1; sent=1; fi
    if send E "$d/err" "$eo" "$2"; then eo=$2; sent=1; fi
    [ $killed = 1 ] && { dropped O "$d/out"; dropped E "$d/err"; printf 'K\\n'; exit 0; }
    if [ $fin = 1 ]; then dropped O "$d/out"; dropped E "$d/err"; printf 'X %s\\n' "$code"; exit 0; fi
    if [ $sent = 1 ]; then delay=0.01; quiet_since=; else
      case $delay in 0.005) delay=0.01 ;; 0.01) delay=0.02 ;; 0.02) delay=0.05 ;; 0.05) delay=0.1 ;; 0.1) delay=0.2 ;; esac
      now=$(date +%s); [ -n "$quiet_since" ] || quiet_since=$now
      [ $((now - quiet_since)) -ge ${SILENCE_FRAME_SECONDS} ] && { printf 'H\\n'; quiet_since=$now; }
    fi
    arm
    read -r code 2>/dev/null < "$d/exit" && { disarm; continue; }
    nap $delay
  done
}

signal_step() { # SIGNAL N: signals every live process of step N (0 only looks); false when none is left
  sig=$1; n=$2; pg=$(cat "$R/run/$n/pid" 2>/dev/null); found=1
  for p in /proc/[0-9]*; do
    pid=\${p#/proc/}
    [ "$pid" = $$ ] && continue
    st=$(cat "$p/stat" 2>/dev/null) || continue
    set -- \${st##*) }
    [ "$1" = Z ] && continue
    if [ "$3" = "$pg" ] || tr '\\0' '\\n' < "$p/environ" 2>/dev/null | grep -qx "${STEP_MARK_VARIABLE}=step-$n"; then
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

pack_outputs() { # counted while tar packs, not after it: the count's walk is off the download's critical path
  forget_secrets
  find ${POD_OUTPUTS_DIR} ! -type s | wc -l > "$R/outputs-count" & counting=$!
  if tar -b 128 -cf - -T /dev/null > /dev/null 2>&1; then set -- -b 128; else set --; fi
  tar "$@" -cf - -C ${POD_OUTPUTS_DIR} .
  rc=$?
  wait $counting
  echo "${OUTPUTS_COUNT_TAG} $(cat "$R/outputs-count")" >&2
  exit $rc
}

${CACHE_HELPER_FUNCTIONS}
case $1 in
  wrap) ;;
  run|follow)
${indent(buildBeatWhileRunnerHolds(options.beatSeconds), 4)} ;;
  *) ${buildBeatWhileExecRuns(options.beatSeconds)} ;;
esac
case $1 in
  run) start_step "$2"; follow "$2" 0 0 ;;
  follow) follow "$2" "$3" "$4" ;;
  kill) kill_step "$2" "$3" ;;
  wrap) wrap "$2" ;;
  secrets) take_secrets ;;
  forget-secrets) forget_secrets ;;
  pack-outputs) pack_outputs ;;
${CACHE_HELPER_DISPATCH}
  *) echo "knotless helper: unknown command $1" >&2; exit 99 ;;
esac
`;
}

/**
 * The upload command (the helper is not in the pod yet): extracts a tar from stdin at `/` (entries are
 * `work/...`, `steps/...`, `knotless/...`, the receipt last), then prints the receipt it extracted and the number
 * of lines `find /work /steps` prints (src/transfer/transfer-receipt.ts). Whatever tar leaves unread is drained, so
 * the sender never writes into a closed pipe or blocks on a full one; a failing tar's exit code is the command's.
 */
export function buildUploadCommand(): string[] {
  const script = [
    buildBeatWhileExecRuns(),
    `tar -xf - -C /`,
    `rc=$?`,
    `cat > /dev/null`,
    `[ $rc = 0 ] || exit $rc`,
    // A missing receipt prints an empty line: the runner reports it as an integrity failure, not as a failed exec.
    `cat /${UPLOAD_RECEIPT_ARCHIVE_PATH} 2>/dev/null || echo`,
    `find ${POD_WORK_DIR} ${POD_STEPS_DIR} | wc -l`,
  ].join("\n");
  return ["sh", "-c", script];
}

/** The argv of each helper call. */
export const helperCommand = {
  run: (index: number) => ["sh", `${POD_RUNNER_DIR}/helper.sh`, "run", String(index)],
  follow: (index: number, stdoutOffset: number, stderrOffset: number) => [
    "sh",
    `${POD_RUNNER_DIR}/helper.sh`,
    "follow",
    String(index),
    String(stdoutOffset),
    String(stderrOffset),
  ],
  kill: (index: number, graceSeconds: number) => ["sh", `${POD_RUNNER_DIR}/helper.sh`, "kill", String(index), String(graceSeconds)],
  /** The line `kill` prints once step `index` has no process left. */
  killConfirmation: (index: number) => `stopped ${index}`,
  packOutputs: () => ["sh", `${POD_RUNNER_DIR}/helper.sh`, "pack-outputs"],
  /** Reads the secrets from stdin; the argv names no secret and no value. */
  takeSecrets: () => ["sh", `${POD_RUNNER_DIR}/helper.sh`, "secrets"],
  forgetSecrets: () => ["sh", `${POD_RUNNER_DIR}/helper.sh`, "forget-secrets"],
} as const;

function indent(text: string, spaces: number): string {
  return text
    .split("\n")
    .map((line) => " ".repeat(spaces) + line)
    .join("\n");
}
