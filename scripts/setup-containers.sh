#!/bin/sh
# Installs podman and a local busybox image so the local cluster can run pods as real containers (idempotent; run as root).
set -eu

IMAGE="docker.io/library/busybox:1.36"
CONF=/etc/containers/containers.conf

say() { echo "setup-containers: $*"; }
fail() { echo "setup-containers: cannot run containers here: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "must run as root (podman runs rootful pods for the local cluster)"

missing=""
command -v podman >/dev/null 2>&1 || missing="$missing podman"
command -v runc >/dev/null 2>&1 || missing="$missing runc"
# The image is /bin/busybox alone, so it must be the static build (a dynamic one would find no libc in the image).
if [ ! -x /bin/busybox ] || ldd /bin/busybox >/dev/null 2>&1; then missing="$missing busybox-static"; fi
if [ -n "$missing" ]; then
  command -v apt-get >/dev/null 2>&1 || fail "apt-get not found; install$missing by hand"
  say "installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q podman runc busybox-static >/dev/null 2>&1; then
    say "apt-get update (package lists missing or stale)"
    apt-get update -q >/dev/null || fail "apt-get update failed"
    apt-get install -y -q podman runc busybox-static >/dev/null || fail "apt-get install podman runc busybox-static failed"
  fi
else
  say "podman, runc and busybox already installed"
fi

WANT_CONF='# Written by knotless-runner-k8s scripts/setup-containers.sh: crun refuses hybrid cgroups; the default nofile ulimit is refused.
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"

[containers]
default_ulimits = []'
if [ -f "$CONF" ] && [ "$(cat "$CONF")" = "$WANT_CONF" ]; then
  say "$CONF already configured"
else
  if [ -f "$CONF" ] && [ ! -f "$CONF.before-knotless" ]; then
    cp "$CONF" "$CONF.before-knotless"
    say "kept the previous $CONF as $CONF.before-knotless"
  fi
  mkdir -p /etc/containers
  printf '%s\n' "$WANT_CONF" > "$CONF"
  say "wrote $CONF (runtime runc, cgroupfs, no default ulimits)"
fi

if podman image exists "$IMAGE" 2>/dev/null; then
  say "image $IMAGE already present"
else
  say "building $IMAGE from /bin/busybox (no registry needed)"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/rootfs/bin" "$work/rootfs/usr/bin" "$work/rootfs/tmp" "$work/rootfs/etc" "$work/rootfs/root"
  cp /bin/busybox "$work/rootfs/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$work/rootfs/bin/$applet"
  done
  chmod 1777 "$work/rootfs/tmp"
  echo 'root:x:0:0:root:/root:/bin/sh' > "$work/rootfs/etc/passwd"
  echo 'root:x:0:' > "$work/rootfs/etc/group"
  tar -C "$work/rootfs" -cf "$work/rootfs.tar" .
  podman import --quiet --change 'ENV PATH=/bin:/usr/bin' "$work/rootfs.tar" "$IMAGE" >/dev/null || fail "podman import failed"
  say "imported $IMAGE"
fi

say "checking that a container runs"
out=$(podman run --rm "$IMAGE" sh -c 'echo ok' 2>&1) || fail "podman run failed: $out"
[ "$out" = ok ] || fail "podman run printed '$out' instead of 'ok'"
say "ready: podman runs $IMAGE"
