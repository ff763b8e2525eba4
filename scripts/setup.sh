#!/bin/sh
# Sets up a fresh machine for the runner, its tests and its local cluster (idempotent; as root on Debian 12).
#   - Debian packages: bubblewrap (the fake kubectl's pods), busybox-static (tar tests, the local image), shellcheck
#     (npm run lint:sh);
#   - npm dependencies, then the TypeScript build;
#   - podman and two local images (busybox; Debian bookworm by debootstrap) for the local cluster (scripts/setup-containers.sh); if containers
#     cannot run here, that part is reported and skipped: the tests that need them say so and skip.
set -eu
cd "$(dirname "$0")/.."

say() { echo "setup: $*"; }

missing=""
command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap"
[ -x /bin/busybox ] || missing="$missing busybox-static"
command -v nsenter >/dev/null 2>&1 || missing="$missing util-linux"
command -v shellcheck >/dev/null 2>&1 || missing="$missing shellcheck"
if [ -n "$missing" ]; then
  if [ "$(id -u)" != 0 ]; then echo "setup: need root to install$missing" >&2; exit 1; fi
  export DEBIAN_FRONTEND=noninteractive
  say "installing$missing"
  # shellcheck disable=SC2086 # split on purpose: one word per package
  apt-get install -y -q $missing >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q $missing >/dev/null; }
fi

# shellcheck disable=SC3013 # -nt: dash (Debian's sh), bash and busybox sh all have it
if [ -f node_modules/.package-lock.json ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
  say "npm dependencies already installed"
else
  say "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
say "building"
npm run build --silent

if sh scripts/setup-containers.sh; then
  say "containers ready"
else
  say "WARNING: containers cannot run here; local-cluster tests will skip and the demo falls back to --dry-run"
fi
