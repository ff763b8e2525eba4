#!/usr/bin/env bash
# Runs the fault e2e tests N times beside CPU busy loops and tallies the failures per test: a test that fails only
# under load is a false failure (or a wait too tight) to find and fix. Needs `npm run build` first.
#
#   scripts/stress-faults.sh [-n RUNS] [-t MINUTES] [-p NAME_PATTERN] [-s PENDING_SECONDS] [-b BUSY_LOOPS] [FILE.test.js ...]
#
# Without FILEs it runs only the tests that inject a fault, listed below per file (the local cluster's setFaults,
# the fake kubectl's faults, the injected crash), not the other tests of those files; with FILEs, all of their tests.
# -p keeps only the tests whose title matches (node --test-name-pattern, in place of the list's); -t starts no test
# file after MINUTES; -s sets the Pending spell of runner-on-local-cluster's scale-from-zero test
# (E2E_PENDING_SECONDS, default 4); -b sets the busy loops (default 2; the machine's own load adds to them).
# The tests and this script run from a copy of the built tree that the first start makes under $STRESS_LOG_DIR
# (default a new temp dir), so a build or an edit meanwhile does not touch them. Each run's TAP output and exit code are kept there, with the load
# average; every run that ended with exit 3 (result.json) is listed with its error and run.log's last line in
# exit3.txt there, and a result that says success with a step that did not succeed in false-success.txt. Run it
# again with the same STRESS_LOG_DIR to resume: a file that ran to its end (its exit code kept) is not run again.
# The tally over every run in the dir is printed at the end: failed/runs per test, the tests skipped for another
# reason than the pattern, and each file that ran no test, was cut short or exited non-zero with no failing test.
set -euo pipefail
# A log dir given relative to where it was started, before the cd (the copy's script goes on from elsewhere).
if [ -n "${STRESS_LOG_DIR:-}" ]; then mkdir -p "$STRESS_LOG_DIR" && STRESS_LOG_DIR=$(cd "$STRESS_LOG_DIR" && pwd -P); fi
cd "$(dirname "$0")/.."
all_args=("$@")

# file (under dist/test/e2e, without .test.js) and the titles of its fault tests (a --test-name-pattern).
FAULT_TESTS=(
  "api-transport-on-local-cluster|resumes a cut exec stream|retries refused exec upgrades|retries a create answered 500|evicted pod and an image pull failure|stalls$"
  "credentials-on-local-cluster|creates the ServiceAccount|and events$"
  "kubectl-transport-on-local-cluster|resumes a cut exec stream"
  "operations-on-local-cluster|doctor fails fast"
  "runner-on-local-cluster|Pending spell|image pull failure|refused exec upgrades|stream cut|evicted pod|create answered 500"
  "stage-cancel-on-local-cluster|."
  "warm-capacity-on-local-cluster|racing for it|killed between claiming|killed mid-claim"
  "faults-with-fake-kubectl|."
  "teardown-and-kill-faults|."
  "cli-with-fake-kubectl|crash|without an exit code"
  "reattach-on-local-cluster|."
  "adoption-on-local-cluster|."
  "idle-guard-on-local-cluster|killed with SIGKILL"
)

runs=3 pattern="" busy=2 minutes=0
while getopts "n:t:p:s:b:h" opt; do
  case $opt in
    n) runs=$OPTARG ;;
    t) minutes=$OPTARG ;;
    p) pattern=$OPTARG ;;
    s) export E2E_PENDING_SECONDS=$OPTARG ;;
    b) busy=$OPTARG ;;
    *) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
files=() patterns=()
if [ $# -gt 0 ]; then
  for file in "$@"; do files+=("$file") patterns+=("$pattern"); done
else
  for entry in "${FAULT_TESTS[@]}"; do
    files+=("dist/test/e2e/${entry%%|*}.test.js") patterns+=("${pattern:-${entry#*|}}")
  done
fi
logs=${STRESS_LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/stress-faults-XXXXXX")}
mkdir -p "$logs"
# The tests run from a copy of the built tree in the log dir (kept for a resume): `npm run build` removes dist
# first, which fails every test that starts while it runs, and a copy by hand forgets a folder (lexicons).
if [ ! -d "$logs/tree" ]; then
  if [ ! -f dist/cli/knotless-runner-k8s.js ]; then
    echo "stress-faults: no dist/cli/knotless-runner-k8s.js here: run npm run build first" >&2
    exit 2
  fi
  mkdir -p "$logs/tree.new"
  cp -r bin dist examples lexicons local-cluster scripts test package.json "$logs/tree.new/"
  ln -s "$(realpath node_modules)" "$logs/tree.new/node_modules"
  mv "$logs/tree.new" "$logs/tree"
fi
# The copy's own script goes on: bash reads a script as it runs, so an edit of this one would break the run.
if [ "$(pwd -P)" != "$(cd "$logs/tree" && pwd -P)" ]; then
  STRESS_LOG_DIR=$logs exec bash "$logs/tree/scripts/stress-faults.sh" "${all_args[@]}"
fi

loops=()
stop_loops() { for pid in "${loops[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap stop_loops EXIT
for _ in $(seq "$busy"); do
  (while :; do :; done) &
  loops+=($!)
done

# Reads every result.json under DIR: a run that ended with exit 3 (what exitCodeForResult maps to it) goes to
# exit3.txt with its error and run.log's end; one that says success with a step that did not succeed, or with an
# error, goes to false-success.txt.
# shellcheck disable=SC2016 # the quoted script is JavaScript, not shell
list_results() {
  node -e '
    const { readdirSync, readFileSync, existsSync, appendFileSync } = require("node:fs");
    const { join } = require("node:path");
    const [dir, label, exit3, falseSuccess] = process.argv.slice(1);
    const walk = (dir) => { for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) { try { walk(path); } catch {} continue; }
      if (e.name !== "result.json") continue;
      let r; try { r = JSON.parse(readFileSync(path, "utf8")); } catch { continue; }
      const log = join(dir, "run.log");
      const last = existsSync(log) ? readFileSync(log, "utf8").trimEnd().split("\n").at(-1) : "(no run.log)";
      if (r.status === "success") {
        const bad = (r.steps ?? []).filter((s) => s.status !== "success" || s.exitCode !== 0);
        if (bad.length > 0 || r.error !== null || r.exitCode !== 0)
          appendFileSync(falseSuccess, `${label} ${r.runId} success with ${JSON.stringify(bad)} ${r.error}\n`);
        continue;
      }
      if (r.status === "cancelled" || r.status === "skipped" || r.status === "timeout") continue;
      if (r.errorReason === null || r.errorReason === "input" || r.errorReason === "artifact-missing") continue;
      appendFileSync(exit3, `${label} ${r.runId} [${r.errorReason}] ${r.error}\n    run.log: ${last}\n`);
    } };
    walk(dir);
  ' "$1" "$2" "$logs/exit3.txt" "$logs/false-success.txt"
}

# Whether a TAP file is complete: node --test ends it with its counts.
is_complete() { [ -f "$1" ] && grep -q '^# duration_ms' "$1"; }
# Whether a run is over: its exit code is kept (or, from before the codes were kept, its TAP output is complete).
is_over() { [ -f "${1%.tap}.code" ] || is_complete "$1"; }

started_all=$(date +%s)
for run in $(seq "$runs"); do
  for i in "${!files[@]}"; do
    file=${files[$i]} name=$(basename "${files[$i]}") && name=${name%%.test.*}
    log="$logs/$name-$run.tap"
    is_over "$log" && continue
    if [ "$minutes" -gt 0 ] && [ $(($(date +%s) - started_all)) -ge $((minutes * 60)) ]; then
      echo "time budget of $minutes min spent: stopping before run $run of $name" | tee -a "$logs/runs.txt"
      break 2
    fi
    args=(--test --test-reporter=tap)
    [ -n "${patterns[$i]}" ] && args+=(--test-name-pattern="${patterns[$i]}")
    # The test's temp dirs (its out dirs with run.log and result.json, serve's state) are read, then removed unless
    # the file failed: a failure is looked into from what its runs left there.
    tmp="$logs/t$i.$run"
    rm -rf "$tmp" && mkdir -p "$tmp"
    started=$(date +%s) code=0
    TMPDIR=$tmp E2E_KEEP_TEMP=1 node "${args[@]}" "$file" > "$log" 2>&1 || code=$?
    echo "$code" > "$logs/$name-$run.code"
    echo "run $run/$runs $name: $(grep -c '^ *not ok ' "$log" || true) failed, exit $code, in $(($(date +%s) - started))s, load $(cut -d' ' -f1-3 /proc/loadavg) ($log)" | tee -a "$logs/runs.txt"
    list_results "$tmp" "$name-$run" || true
    if [ "$code" = 0 ]; then rm -rf "$tmp"; else mv "$tmp" "$logs/$name-$run.tmp"; fi
  done
done

# The tally, over every run in the dir that is over (so a resumed session counts the earlier ones too).
declare -A seen=() failed=() skipped=()
odd=()
for log in "$logs"/*.tap; do
  is_over "$log" || continue
  name=$(basename "$log" .tap) && name=${name%-*}
  code=$(cat "${log%.tap}.code" 2>/dev/null || echo "?")
  ran=0 bad=0
  # Each test's line: "ok N - title" or "not ok N - title", indented by its depth; skipped ones say "# SKIP".
  while IFS= read -r line; do
    [[ $line == *' # SKIP test name does not match pattern' ]] && continue
    [[ $line =~ ^\ *(not\ )?ok\ [0-9]+\ -\ (.*)$ ]] || continue
    title=${BASH_REMATCH[2]%% # SKIP*} && title=${title%% # TODO*}
    key="$name: $title"
    if [[ $line == *' # SKIP'* ]]; then skipped[$key]=$((${skipped[$key]:-0} + 1)) && continue; fi
    seen[$key]=$((${seen[$key]:-0} + 1)) ran=$((ran + 1))
    [[ $line =~ ^\ *not\ ok ]] && failed[$key]=$((${failed[$key]:-0} + 1)) bad=$((bad + 1))
  done < <(grep -E '^ *(not )?ok [0-9]+ - ' "$log")
  is_complete "$log" || odd+=("$(basename "$log"): exit $code, its TAP output cut short")
  [ "$ran" -eq 0 ] && odd+=("$(basename "$log"): no test ran")
  [ "$bad" -eq 0 ] && [ "$code" != 0 ] && [ "$code" != "?" ] && odd+=("$(basename "$log"): exit $code with no failing test")
done

echo
echo "exits 3 (each should name the wait or call that gave up and after how long): $logs/exit3.txt"
[ -s "$logs/false-success.txt" ] && echo "FALSE SUCCESSES (a success result with a failed step): $logs/false-success.txt"
for line in "${odd[@]}"; do echo "NOT COUNTED AS A TEST: $line"; done
echo "failures/runs per test, beside $busy busy loop(s) (logs in $logs):"
for key in "${!seen[@]}" "${!skipped[@]}"; do
  printf '%s/%s  %s%s\n' "${failed[$key]:-0}" "${seen[$key]:-0}" "$key" "${skipped[$key]:+ (skipped ${skipped[$key]} times)}"
done | sort -u | sort -t/ -k1,1nr -k2
