#!/bin/sh
# The README's first command (after scripts/setup.sh): runs the example workflow on examples/hello on the local cluster
# through the real kubectl.
# Where containers cannot run, it says why and prints the --dry-run plan instead.
set -eu
cd "$(dirname "$0")/.."
[ -f dist/cli/knotless-runner-k8s.js ] || npm run build --silent
out="out/example-$(date +%Y%m%d-%H%M%S)"
run() {
  node bin/knotless-runner-k8s.js run --workflow examples/workflows/hello.yml --checkout examples/hello \
    --shared-steps examples/shared-steps --out "$out" "$@"
}
if ! command -v kubectl >/dev/null 2>&1; then
  echo "demo: no kubectl on PATH; showing the plan instead" >&2
  run --dry-run --kubectl kubectl
  exit 0
fi
if ! podman info >/dev/null 2>&1; then
  echo "demo: containers cannot run here (podman info failed; see scripts/setup-containers.sh); showing the plan instead" >&2
  run --dry-run
  exit 0
fi
node dist/local-cluster/cli.js up
trap 'node dist/local-cluster/cli.js down >/dev/null 2>&1 || true' EXIT INT TERM
set +e
run --kubeconfig .local-cluster/kubeconfig
code=$?
set -e
echo "demo: exit code $code; result, run.log, log.ndjson and outputs/ are in $out" >&2
exit $code
