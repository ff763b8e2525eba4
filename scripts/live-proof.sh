#!/bin/sh
# The live proof: doctor, a scoped credential, the example run with it, outputs and teardown checked, nodes counted,
# the credential revoked (also on failure), and a report (markdown and JSON). Never prints a secret.
set -eu
umask 077

# shellcheck disable=SC2016 # the usage text shows $ and backticks as they are
USAGE='usage: scripts/live-proof.sh --kubeconfig FILE --report DIR [options]
       scripts/live-proof.sh --local --report DIR [options]

With the admin kubeconfig FILE (scripts/tenant-kubeconfig.sh writes one), or against the local cluster with --local:
  1. counts the nodes (kubectl get nodes, admin kubeconfig), then runs `knotless-runner-k8s doctor --json`;
  2. mints a scoped ServiceAccount kubeconfig (`knotless-runner-k8s credentials`, mode 0600, in a private temp dir);
  3. runs the example workflow (examples/workflows/hello.yml) on examples/hello with examples/shared-steps with that
     scoped identity, counting nodes while it runs;
  4. checks that the outputs came back and that the Job and its pods are gone, then counts nodes again until they
     are back to zero or --after-wait is over;
  5. revokes the scoped credential (`credentials --revoke`), also when an earlier step failed or on Ctrl-C;
  6. writes DIR/live-proof.md and DIR/live-proof.json; the run'"'"'s own files (result.json, run.log, log.ndjson,
     outputs/) are in DIR/run/.

  --kubeconfig FILE     the admin kubeconfig of the cluster (not with --local)
  --context NAME        its context                                   [default: its current context]
  --local               start the local cluster (node dist/local-cluster/cli.js up --dir D, D private), run
                        against it and stop it (down) on exit; needs podman (scripts/setup-containers.sh)
  --report DIR          where the report goes; must not hold a live proof already (required)
  --namespace NS        where the ServiceAccount and the Job go       [default: default]
  --name NAME           the ServiceAccount (credentials --name)       [default: knotless-live-proof]
  --duration DUR        the scoped credential'"'"'s lifetime (credentials --duration)  [default: the command'"'"'s]
  --image REF           the run'"'"'s image (run --image)                 [default: the workflow'"'"'s, busybox:1.36]
  --kubectl PATH        kubectl for the script'"'"'s own calls (KNOTLESS_KUBECTL; the runner speaks the API itself)  [default: kubectl on PATH]
  --sample-every SECS   node count interval while the run runs      [default: 10; 1 with --local]
  --after-wait SECS     after the run, count nodes until zero or this long  [default: 180, the ~2 min hold
                        and some; 0 with --local]
  --runner PATH         the knotless-runner-k8s executable            [default: node bin/knotless-runner-k8s.js]
  -h, --help            this help

SECS is a whole number of seconds, with an optional s or m suffix (90, 90s, 3m).
The run is the example workflow file, run --workflow examples/workflows/hello.yml on the checkout examples/hello
with examples/shared-steps in /steps. See docs/live-proof.md.

Exit codes:
  0  every check passed (the report says so)
  1  a check failed or the proof stopped early (the report says which); also when the revoke failed
  2  bad usage
  3  a prerequisite is missing (node, kubectl, the built CLI, the kubeconfig, podman for --local)'

say() { printf 'live-proof: %s\n' "$*" >&2; }
die() {
  code=$1
  shift
  say "$*"
  exit "$code"
}
usage_error() { die 2 "$* (see --help)"; }
need_value() { [ "$2" -ge 2 ] || usage_error "$1 needs a value"; }
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }

# DUR -> whole seconds: N, Ns or Nm.
to_seconds() {
  case $2 in
    *m) number=${2%m} unit=60 ;;
    *s) number=${2%s} unit=1 ;;
    *) number=$2 unit=1 ;;
  esac
  case $number in '' | *[!0-9]*) usage_error "$1 expects whole seconds such as 90, 90s or 3m (got \"$2\")" ;; esac
  echo $((number * unit))
}

check_label() {
  case $2 in
    '' | *[!a-z0-9-]* | -* | *-) usage_error "$1 expects a DNS-1123 label (lowercase letters, digits, '-'), got \"$2\"" ;;
  esac
}

kubeconfig=
context=
local_cluster=
report=
namespace=default
sa_name=knotless-live-proof
duration=
image=
kubectl=
sample_every=
after_wait=
runner=

while [ $# -gt 0 ]; do
  case $1 in
    -h | --help)
      printf '%s\n' "$USAGE"
      exit 0
      ;;
    --kubeconfig) need_value "$1" $#; kubeconfig=$2; shift ;;
    --context) need_value "$1" $#; context=$2; shift ;;
    --local) local_cluster=1 ;;
    --report) need_value "$1" $#; report=$2; shift ;;
    --namespace) need_value "$1" $#; namespace=$2; shift ;;
    --name) need_value "$1" $#; sa_name=$2; shift ;;
    --duration) need_value "$1" $#; duration=$2; shift ;;
    --image) need_value "$1" $#; image=$2; shift ;;
    --kubectl) need_value "$1" $#; kubectl=$2; shift ;;
    --sample-every) need_value "$1" $#; sample_every=$(to_seconds "$1" "$2"); shift ;;
    --after-wait) need_value "$1" $#; after_wait=$(to_seconds "$1" "$2"); shift ;;
    --runner) need_value "$1" $#; runner=$2; shift ;;
    *) usage_error "unknown option \"$1\"" ;;
  esac
  shift
done

[ -n "$report" ] || usage_error "--report DIR is required"
if [ -n "$local_cluster" ]; then
  [ -z "$kubeconfig" ] || usage_error "--local and --kubeconfig exclude each other: --local makes its own cluster"
  [ -z "$context" ] || usage_error "--context goes with --kubeconfig, not --local"
  : "${sample_every:=1}" "${after_wait:=0}"
else
  [ -n "$kubeconfig" ] || usage_error "--kubeconfig FILE (the admin kubeconfig) or --local is required"
  : "${sample_every:=10}" "${after_wait:=180}"
fi
[ "$sample_every" -ge 1 ] || usage_error "--sample-every must be at least 1 second"
check_label --namespace "$namespace"
check_label --name "$sa_name"

here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
repo=$(dirname -- "$here")

# ---- prerequisites ------------------------------------------------------------------------------------------------
command -v node >/dev/null 2>&1 || die 3 "node is not on PATH: install Node.js 20 or later (sh scripts/setup.sh on Debian)"
if [ -n "$kubectl" ]; then
  [ -x "$kubectl" ] || command -v "$kubectl" >/dev/null 2>&1 || die 3 "--kubectl $kubectl is not an executable"
else
  command -v kubectl >/dev/null 2>&1 || die 3 "kubectl is not on PATH: install it (https://kubernetes.io/docs/tasks/tools/) or pass --kubectl PATH"
  kubectl=kubectl
fi
if [ -n "$runner" ]; then
  [ -x "$runner" ] || die 3 "--runner $runner is not an executable"
else
  [ -f "$repo/dist/cli/knotless-runner-k8s.js" ] || die 3 "the CLI is not built: run npm ci && npm run build (or sh scripts/setup.sh)"
fi
if [ -n "$local_cluster" ]; then
  [ -f "$repo/dist/local-cluster/cli.js" ] || die 3 "the local cluster is not built: run npm ci && npm run build (or sh scripts/setup.sh)"
  podman info >/dev/null 2>&1 || die 3 "--local needs podman, and podman info failed: containers cannot run here (see scripts/setup-containers.sh)"
else
  { [ -f "$kubeconfig" ] && [ -r "$kubeconfig" ]; } || die 3 "cannot read the admin kubeconfig $kubeconfig (scripts/tenant-kubeconfig.sh writes one)"
  case $kubeconfig in /*) ;; *) kubeconfig="$(pwd)/$kubeconfig" ;; esac
  set -f
  # shellcheck disable=SC2046 # split on purpose: the fields of ls -l
  set -- $(ls -ldn -- "$kubeconfig")
  set +f
  case $1 in -???------*) ;; *) say "warning: $kubeconfig is readable by group or others (mode $1): it holds a cluster-admin key; chmod 600 it" ;; esac
fi
export KNOTLESS_KUBECTL="$kubectl"

mkdir -p -- "$report"
report=$(CDPATH='' cd -- "$report" && pwd)
if [ -e "$report/run" ] || [ -e "$report/live-proof.json" ]; then
  usage_error "--report $report already holds a live proof; choose a new directory"
fi

# ---- state, private temp files, and the one exit path --------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/live-proof.XXXXXX")
facts="$work/facts.tsv"
scoped="$work/scoped.kubeconfig"
cluster_dir="$work/cluster"
run_id="live-proof-$(date -u +%Y%m%d-%H%M%S)-$$"
run_selector="knotless.dev/run-id=$run_id"
admin_kubeconfig=
cluster_up=
minted=
run_pid=
interrupted=

# One fact per line, "key<TAB>value"; the report is built from them (scripts/lib/live-proof-report.mjs).
fact() {
  key=$1
  shift
  printf '%s\t%s\n' "$key" "$(printf '%s' "$*" | tr '\t\n' '  ')" >>"$facts"
}

# Masks every token, key and password of the admin and the scoped kubeconfig.
mask() { node "$here/lib/live-proof-report.mjs" mask --kubeconfig "$admin_kubeconfig" --kubeconfig "$scoped"; }
show_masked() {
  [ -s "$1" ] || return 0
  mask <"$1" | sed 's/^/  | /' >&2
}

fail() {
  stage=$1
  shift
  fact failure_stage "$stage"
  fact failure_message "$*"
  say "FAILED at $stage: $*"
  exit 1
}

runner_exec() {
  if [ -n "$runner" ]; then exec "$runner" "$@"; fi
  exec node "$repo/bin/knotless-runner-k8s.js" "$@"
}
runner() { (runner_exec "$@"); }

kubectl_admin() {
  if [ -n "$context" ]; then
    "$kubectl" --kubeconfig "$admin_kubeconfig" --context "$context" --request-timeout=20s "$@"
  else
    "$kubectl" --kubeconfig "$admin_kubeconfig" --request-timeout=20s "$@"
  fi
}

# The number of nodes the admin kubeconfig sees, or "?" when kubectl fails.
count_nodes() {
  if names=$(kubectl_admin get nodes -o name 2>/dev/null); then
    printf '%s\n' "$names" | grep -c . || true
  else
    echo '?'
  fi
}

revoke() {
  say "revoking the scoped credential (credentials --revoke --name $sa_name)"
  set -- --kubeconfig "$admin_kubeconfig" --namespace "$namespace" --name "$sa_name" --out "$scoped" --revoke
  [ -z "$context" ] || set -- "$@" --context "$context"
  code=0
  runner credentials "$@" >"$work/revoke.out" 2>&1 || code=$?
  fact revoke_exit "$code"
  fact revoke_output "$work/revoke.out"
  if [ "$code" -ne 0 ]; then
    show_masked "$work/revoke.out"
    say "the scoped credential may still be valid: revoke it with knotless-runner-k8s credentials --kubeconfig $admin_kubeconfig --namespace $namespace --name $sa_name --out FILE --revoke"
  fi
}

# Stops a run still going (so that it deletes its Job): after Ctrl-C it has the signal too, and a second one would
# make it exit without deleting, so it gets 30 s to finish first; after any other exit it gets SIGTERM at once.
stop_run() {
  [ -n "$run_pid" ] && kill -0 "$run_pid" 2>/dev/null || return 0
  if [ "$interrupted" = INT ]; then
    waited=0
    while kill -0 "$run_pid" 2>/dev/null && [ "$waited" -lt 30 ]; do
      sleep 1
      waited=$((waited + 1))
    done
  fi
  if kill -0 "$run_pid" 2>/dev/null; then
    say "stopping the run (SIGTERM) so that it deletes its Job"
    kill -TERM "$run_pid" 2>/dev/null || true
  fi
  wait "$run_pid" 2>/dev/null || true
}

finish() {
  status=$?
  trap '' INT TERM HUP
  set +e
  stop_run
  [ -z "$minted" ] || revoke
  fact finished_at "$(now)"
  if [ -f "$facts" ]; then
    node "$here/lib/live-proof-report.mjs" report --facts "$facts" --report "$report" \
      --kubeconfig "$admin_kubeconfig" --kubeconfig "$scoped"
    verdict=$?
    [ "$verdict" -eq 0 ] || [ "$status" -ne 0 ] || status=1
  fi
  if [ -n "$cluster_up" ]; then
    node "$repo/dist/local-cluster/cli.js" down --dir "$cluster_dir" >/dev/null 2>&1 || say "warning: the local cluster did not stop cleanly (node dist/local-cluster/cli.js prune removes what it left)"
  fi
  rm -rf -- "$work"
  exit "$status"
}
on_signal() {
  interrupted=$1
  fact interrupted "$1"
  say "$1: stopping; the run deletes its Job and the scoped credential is revoked"
  exit "$2"
}
trap finish EXIT
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM
trap 'on_signal HUP 129' HUP

fact started_at "$(now)"
fact run_id "$run_id"
fact run_selector "$run_selector"
fact namespace "$namespace"
fact image "$image"
fact kubectl "$kubectl"
fact credential_name "$sa_name"
fact credential_duration "$duration"

if [ -n "$local_cluster" ]; then
  fact local 1
  say "starting the local cluster"
  cluster_up=1 # before up: one that came up half-way is stopped too (down is harmless when nothing runs)
  # --tls: kubectl sends the scoped kubeconfig's token only over https (over http it would be the admin).
  node "$repo/dist/local-cluster/cli.js" up --dir "$cluster_dir" --port 0 --admin-port 0 --tls >"$work/cluster-up.out" 2>&1 ||
    { show_masked "$work/cluster-up.out"; fail cluster "the local cluster did not start (see above)"; }
  admin_kubeconfig="$cluster_dir/kubeconfig"
else
  fact local 0
  admin_kubeconfig=$kubeconfig
  fact kubeconfig "$kubeconfig"
  fact context "$context"
fi

# ---- 1. nodes before, doctor ---------------------------------------------------------------------------------------
nodes=$(count_nodes)
fact nodes_before "$nodes"
say "nodes before the run: $nodes"

say "doctor --json"
set -- --kubeconfig "$admin_kubeconfig" --namespace "$namespace" --json
[ -z "$context" ] || set -- "$@" --context "$context"
code=0
runner doctor "$@" >"$work/doctor.out" 2>"$work/doctor.err" || code=$?
fact doctor_exit "$code"
fact doctor_stdout "$work/doctor.out"
fact doctor_stderr "$work/doctor.err"
case $code in
  0) say "doctor: every check passed" ;;
  3) show_masked "$work/doctor.out"; show_masked "$work/doctor.err"; fail doctor "doctor found a problem (exit 3; its answer is above and in the report)" ;;
  *) show_masked "$work/doctor.err"; fail doctor "doctor exited $code (expected 0, or 3 for a failed check)" ;;
esac

# ---- 2. the scoped credential --------------------------------------------------------------------------------------
say "credentials: minting the scoped ServiceAccount $sa_name in $namespace"
minted=1
set -- --kubeconfig "$admin_kubeconfig" --namespace "$namespace" --name "$sa_name" --out "$scoped"
[ -z "$context" ] || set -- "$@" --context "$context"
[ -z "$duration" ] || set -- "$@" --duration "$duration"
code=0
runner credentials "$@" >"$work/credentials.out" 2>&1 || code=$?
fact credential_exit "$code"
fact credential_output "$work/credentials.out"
if [ "$code" -ne 0 ]; then
  show_masked "$work/credentials.out"
  fail credentials "credentials exited $code (expected 0 and a kubeconfig in --out)"
fi
[ -f "$scoped" ] || fail credentials "credentials exited 0 but wrote no kubeconfig to --out"
set -f
# shellcheck disable=SC2046 # split on purpose: the fields of ls -l
set -- $(ls -ldn -- "$scoped")
set +f
case $1 in -rw-------*) fact credential_mode 0600 ;; *) fact credential_mode "$1" ;; esac
case $1 in -rw-------*) ;; *) fail credentials "the scoped kubeconfig's mode is $1, expected -rw------- (0600)" ;; esac

# ---- 3. the example run with the scoped identity, nodes counted while it runs ------------------------------------------
say "run: examples/hello with the scoped identity (follow it with: tail -f $report/run/run.log)"
set -- run --workflow "$repo/examples/workflows/hello.yml" --checkout "$repo/examples/hello" --shared-steps "$repo/examples/shared-steps" \
  --out "$report/run" --kubeconfig "$scoped" --namespace "$namespace" --run-id "$run_id"
[ -z "$image" ] || set -- "$@" --image "$image"
runner_exec "$@" >"$work/run.console" 2>&1 &
run_pid=$!
fact run_console "$work/run.console"
started=$(date +%s)
last=
while kill -0 "$run_pid" 2>/dev/null; do
  nodes=$(count_nodes)
  fact nodes_during "$(now) $nodes"
  [ "$nodes" = "$last" ] || say "nodes while the run runs: $nodes (after $(($(date +%s) - started)) s)"
  last=$nodes
  sleep "$sample_every" &
  wait $! || true
done
code=0
wait "$run_pid" || code=$?
run_pid=
ended=$(date +%s)
fact run_exit "$code"
if [ "$code" -eq 0 ]; then say "run: success after $((ended - started)) s"; else say "run: exit $code after $((ended - started)) s"; fi

# ---- 4. the Job and its pods are gone; nodes after --------------------------------------------------------------------
check_gone() { # prints what is left (kind/name lines), exits non-zero when kubectl fails
  kubectl_admin get "$1" -n "$namespace" -l "$run_selector" -o name 2>"$work/gone.err"
}
if left=$(check_gone jobs); then
  if [ -z "$left" ]; then
    fact job_gone yes
  else
    fact job_gone no
    fact job_detail "left behind: $left; deleted now with the admin kubeconfig"
    say "the run's Job is still there ($left): deleting it with the admin kubeconfig"
    kubectl_admin delete jobs -n "$namespace" -l "$run_selector" --cascade=background --ignore-not-found >/dev/null 2>&1 ||
      say "could not delete it: $kubectl delete jobs -n $namespace -l $run_selector --cascade=background"
  fi
else
  fact job_gone unknown
  fact job_detail "kubectl get jobs failed: $(mask <"$work/gone.err" | tr '\n' ' ' | cut -c1-300)"
fi
pods_gone=unknown
waited=0
while :; do
  if ! left=$(check_gone pods); then
    fact pods_detail "kubectl get pods failed: $(mask <"$work/gone.err" | tr '\n' ' ' | cut -c1-300)"
    break
  fi
  if [ -z "$left" ]; then
    pods_gone=yes
    break
  fi
  pods_gone=no
  [ "$waited" -lt 60 ] || break
  sleep 2 &
  wait $! || true
  waited=$((waited + 2))
done
fact pods_gone "$pods_gone"
fact pods_gone_after_s "$(($(date +%s) - ended))"
[ "$pods_gone" != no ] || fact pods_detail "still there 60 s after the run: $(printf '%s' "$left" | tr '\n' ' ')"

after_started=$(date +%s)
while :; do
  nodes=$(count_nodes)
  fact nodes_after "$(now) $nodes"
  elapsed=$(($(date +%s) - after_started))
  { [ "$nodes" != 0 ] && [ "$elapsed" -lt "$after_wait" ]; } || break # "?" (kubectl failed) waits too: it may be a blip
  say "nodes after the run: $nodes (waiting up to $after_wait s for zero, $elapsed s so far)"
  sleep 10 &
  wait $! || true
done
fact after_since_run_end_s "$(($(date +%s) - ended))"
say "nodes after the run: $nodes"
[ "$code" -eq 0 ] || { show_masked "$work/run.console"; fail run "the run exited $code (its result and logs are in $report/run)"; }
