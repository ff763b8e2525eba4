#!/usr/bin/env bash
# Runs the local cluster's fault e2e tests N times beside two CPU busy loops and tallies the failures per test: a test
# that fails only under load is a false failure (or a wait too tight) to find and fix. Needs `npm run build` first.
#
#   scripts/stress-faults.sh [-n RUNS] [-p NAME_PATTERN] [-s PENDING_SECONDS] [-b BUSY_LOOPS] [FILE.test.js ...]
#
# FILEs default to the e2e tests that inject the local cluster's faults (dist/test/e2e/*-on-local-cluster.test.js
# that call setFaults); -p keeps only the tests whose title matches (node --test-name-pattern); -s sets the Pending
# spell of runner-on-local-cluster's scale-from-zero test (E2E_PENDING_SECONDS, default 4). Each run's TAP output
# is kept under $STRESS_LOG_DIR (default a new temp dir), and the tally is printed at the end: failures/runs per test.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3 pattern="" busy=2
while getopts "n:p:s:b:h" opt; do
  case $opt in
    n) runs=$OPTARG ;;
    p) pattern=$OPTARG ;;
    s) export E2E_PENDING_SECONDS=$OPTARG ;;
    b) busy=$OPTARG ;;
    *) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ $# -gt 0 ]; then files=("$@"); else
  mapfile -t files < <(grep -l "setFaults" test/e2e/*-on-local-cluster.test.ts | sed 's|^test/|dist/test/|; s|\.ts$|.js|')
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

declare -A seen=() failed=()
for run in $(seq "$runs"); do
  for file in "${files[@]}"; do
    log="$logs/$(basename "$file" .test.js)-$run.tap"
    args=(--test --test-reporter=tap)
    [ -n "$pattern" ] && args+=(--test-name-pattern="$pattern")
    started=$(date +%s)
    node "${args[@]}" "$file" > "$log" 2>&1 || true
    echo "run $run/$runs $(basename "$file"): $(grep -c '^ *not ok ' "$log" || true) failed in $(($(date +%s) - started))s, load $(cut -d' ' -f1-3 /proc/loadavg) ($log)"
    # Each test's line: "ok N - title" or "not ok N - title", indented by its depth; skipped ones say "# SKIP".
    while IFS= read -r line; do
      title=$(sed -E 's/^ *(not )?ok [0-9]+ - //; s/ # (SKIP|TODO).*$//' <<< "$line")
      key="$(basename "$file" .test.js): $title"
      grep -q ' # SKIP' <<< "$line" && continue
      seen[$key]=$((${seen[$key]:-0} + 1))
      [[ $line =~ ^\ *not\ ok ]] && failed[$key]=$((${failed[$key]:-0} + 1))
    done < <(grep -E '^ *(not )?ok [0-9]+ - ' "$log")
  done
done

echo
echo "failures/runs per test, beside $busy busy loop(s) (logs in $logs):"
for key in "${!seen[@]}"; do printf '%s/%s  %s\n' "${failed[$key]:-0}" "${seen[$key]}" "$key"; done | sort -t/ -k1,1nr -k2
