#!/usr/bin/env bash
# Runs the fault e2e tests N times beside CPU busy loops and tallies the failures per test: a test that fails only
# under load is a false failure (or a wait too tight) to find and fix. Needs `npm run build` first.
#
#   scripts/stress-faults.sh [-n RUNS] [-t MINUTES] [-p NAME_PATTERN] [-s PENDING_SECONDS] [-b BUSY_LOOPS] [FILE.test.js ...]
#
# Without FILEs it runs only the tests that inject a fault, listed below per file (the local cluster's setFaults,
# the fake kubectl's faults, the injected crash), not the other tests of those files; with FILEs, all of their tests.
# -p keeps only the tests whose title matches (node --test-name-pattern, in place of the list's); -t stops starting
# a new round after MINUTES; -s sets the Pending spell of runner-on-local-cluster's scale-from-zero test
# (E2E_PENDING_SECONDS, default 4); -b sets the busy loops (default 2; the machine's own load adds to them). Each
# run's TAP output is kept under $STRESS_LOG_DIR (default a new temp dir), with the load average, and every run that
# ended with exit 3 (result.json) is listed with its error and run.log's last line in exit3.txt there. The tally,
# failures/runs per test, is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

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
)

runs=3 pattern="" busy=2 minutes=0
while getopts "n:t:p:s:b:h" opt; do
  case $opt in
    n) runs=$OPTARG ;;
    t) minutes=$OPTARG ;;
    p) pattern=$OPTARG ;;
    s) export E2E_PENDING_SECONDS=$OPTARG ;;
    b) busy=$OPTARG ;;
    *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
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

loops=()
stop_loops() { for pid in "${loops[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap stop_loops EXIT
for _ in $(seq "$busy"); do
  (while :; do :; done) &
  loops+=($!)
done

# Lists the runs under DIR that ended with exit 3 (what exitCodeForResult maps to it): the error and run.log's end.
# shellcheck disable=SC2016 # the quoted script is JavaScript, not shell
list_exit3() {
  node -e '
    const { readdirSync, readFileSync, existsSync } = require("node:fs");
    const { join } = require("node:path");
    const walk = (dir) => { for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) { try { walk(path); } catch {} continue; }
      if (e.name !== "result.json") continue;
      let r; try { r = JSON.parse(readFileSync(path, "utf8")); } catch { continue; }
      if (r.status === "cancelled" || r.status === "skipped" || r.status === "timeout") continue;
      if (r.errorReason === null || r.errorReason === "input" || r.errorReason === "artifact-missing") continue;
      const log = join(dir, "run.log");
      const last = existsSync(log) ? readFileSync(log, "utf8").trimEnd().split("\n").at(-1) : "(no run.log)";
      console.log(`${process.argv[2]} ${r.runId} [${r.errorReason}] ${r.error}\n    run.log: ${last}`);
    } };
    walk(process.argv[1]);
  ' "$1" "$2"
}

declare -A seen=() failed=()
started_all=$(date +%s)
for run in $(seq "$runs"); do
  if [ "$minutes" -gt 0 ] && [ $(($(date +%s) - started_all)) -ge $((minutes * 60)) ]; then
    echo "time budget of $minutes min spent: stopping before run $run"
    break
  fi
  for i in "${!files[@]}"; do
    file=${files[$i]} name=$(basename "${files[$i]}" .test.js)
    log="$logs/$name-$run.tap"
    args=(--test --test-reporter=tap)
    [ -n "${patterns[$i]}" ] && args+=(--test-name-pattern="${patterns[$i]}")
    # The test's temp dirs (its out dirs with run.log and result.json) are kept until read, then removed.
    tmp="$logs/t$i.$run"
    mkdir -p "$tmp"
    started=$(date +%s)
    TMPDIR=$tmp E2E_KEEP_TEMP=1 node "${args[@]}" "$file" > "$log" 2>&1 || true
    echo "run $run/$runs $name: $(grep -c '^ *not ok ' "$log" || true) failed in $(($(date +%s) - started))s, load $(cut -d' ' -f1-3 /proc/loadavg) ($log)" | tee -a "$logs/runs.txt"
    list_exit3 "$tmp" "$name-$run" >> "$logs/exit3.txt" || true
    rm -rf "$tmp"
    # Each test's line: "ok N - title" or "not ok N - title", indented by its depth; skipped ones say "# SKIP".
    while IFS= read -r line; do
      title=$(sed -E 's/^ *(not )?ok [0-9]+ - //; s/ # (SKIP|TODO).*$//' <<< "$line")
      key="$name: $title"
      grep -q ' # SKIP' <<< "$line" && continue
      seen[$key]=$((${seen[$key]:-0} + 1))
      [[ $line =~ ^\ *not\ ok ]] && failed[$key]=$((${failed[$key]:-0} + 1))
    done < <(grep -E '^ *(not )?ok [0-9]+ - ' "$log")
  done
done

echo
echo "exits 3 (each should name the wait or call that gave up and after how long): $logs/exit3.txt"
echo "failures/runs per test, beside $busy busy loop(s) (logs in $logs):"
for key in "${!seen[@]}"; do printf '%s/%s  %s\n' "${failed[$key]:-0}" "${seen[$key]}" "$key"; done | sort -t/ -k1,1nr -k2
