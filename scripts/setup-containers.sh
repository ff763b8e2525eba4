#!/bin/sh
# Installs podman and three local images (busybox; Debian bookworm with bash, GNU tools and zstd; the same with PostgreSQL) so the local cluster can run pods as real containers (idempotent; run as root).
set -eu

IMAGE="docker.io/library/busybox:1.36"
DEBIAN_IMAGE="docker.io/library/debian:bookworm-slim"
# The Debian image carries zstd, so the caches' zstd path runs in the local cluster (busybox keeps the gzip path), and
# git, so a checkout is cloned in the pod as Tangled clones it (busybox keeps the host's clone). The label marks an
# image this script built with each: one without both labels (an older build, a pulled image) is rebuilt.
DEBIAN_LABEL="knotless.zstd"
DEBIAN_GIT_LABEL="knotless.git"
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

# The first URI that apt fetches Debian bookworm from, in /etc/apt/sources.list ("deb [opts] URI bookworm ...") or a
# deb822 file in /etc/apt/sources.list.d/*.sources (a stanza with "Types: deb", "Suites: ... bookworm ..."); no other
# registry or mirror is reachable here, so debootstrap uses the same one.
read_debian_mirror() {
  mirror=""
  if [ -f /etc/apt/sources.list ]; then
    mirror=$(awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ } if ($(i + 1) == "bookworm") { print $i; exit } }' /etc/apt/sources.list)
  fi
  for file in /etc/apt/sources.list.d/*.sources; do
    { [ -z "$mirror" ] && [ -f "$file" ]; } || continue
    mirror=$(awk '
      function flush() { if (deb && enabled && bookworm && uri != "" && !found) { print uri; found = 1 } deb = 0; enabled = 1; bookworm = 0; uri = "" }
      BEGIN { enabled = 1 }
      /^[[:space:]]*$/ { flush(); next }
      /^#/ { next }
      tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
      tolower($1) == "uris:" { uri = $2 }
      tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == "bookworm") bookworm = 1 }
      tolower($1) == "enabled:" { enabled = (tolower($2) != "no") }
      END { flush() }' "$file")
  done
  echo "$mirror"
}

if podman image exists "$DEBIAN_IMAGE" 2>/dev/null && [ "$(podman image inspect --format "{{index .Labels \"$DEBIAN_LABEL\"}}{{index .Labels \"$DEBIAN_GIT_LABEL\"}}" "$DEBIAN_IMAGE" 2>/dev/null)" = 11 ]; then
  say "image $DEBIAN_IMAGE already present (with zstd and git)"
else
  podman image exists "$DEBIAN_IMAGE" 2>/dev/null && say "image $DEBIAN_IMAGE lacks zstd or git (no $DEBIAN_LABEL or $DEBIAN_GIT_LABEL label): building it again"
  if ! command -v debootstrap >/dev/null 2>&1; then
    say "installing debootstrap"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q debootstrap >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q debootstrap >/dev/null; } || fail "apt-get install debootstrap failed"
  fi
  mirror=$(read_debian_mirror)
  [ -n "$mirror" ] || fail "no bookworm mirror in /etc/apt/sources.list or /etc/apt/sources.list.d/*.sources for debootstrap"
  say "building $DEBIAN_IMAGE with debootstrap --variant=minbase --include=zstd,git bookworm from $mirror (35 s to a few minutes, by the mirror and the load)"
  debian=$(mktemp -d)
  trap 'rm -rf "$debian" ${work:+"$work"}' EXIT
  debootstrap --variant=minbase --include=zstd,git bookworm "$debian/rootfs" "$mirror" >"$debian/debootstrap.log" 2>&1 ||
    fail "debootstrap failed; the end of its log: $(tail -n 5 "$debian/debootstrap.log")"
  # What an image needs no copy of: package lists and downloaded .debs (like the real -slim image, which is ~75 MB).
  rm -rf "$debian/rootfs/var/lib/apt/lists/"* "$debian/rootfs/var/cache/apt/archives/"*.deb
  tar -C "$debian/rootfs" -cf "$debian/rootfs.tar" .
  [ -x "$debian/rootfs/usr/bin/zstd" ] || fail "debootstrap --include=zstd left no /usr/bin/zstd in the image"
  [ -x "$debian/rootfs/usr/bin/git" ] || fail "debootstrap --include=git left no /usr/bin/git in the image"
  podman import --quiet --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change 'CMD ["bash"]' --change "LABEL $DEBIAN_LABEL=1" --change "LABEL $DEBIAN_GIT_LABEL=1" "$debian/rootfs.tar" "$DEBIAN_IMAGE" >/dev/null ||
    fail "podman import of $DEBIAN_IMAGE failed"
  rm -rf "$debian"
  say "imported $DEBIAN_IMAGE"
fi

# A Debian image with PostgreSQL, for the services end-to-end test (a database beside the steps, psql in the steps):
# built like the Debian image, with the server's start script (scripts/postgres-image/knotless-postgres.sh) as its
# entrypoint. KNOTLESS_SKIP_POSTGRES=1 skips it; the tests that need it then skip, saying so.
POSTGRES_IMAGE="localhost/knotless-postgres:bookworm"
POSTGRES_LABEL="knotless.postgres"
START_SCRIPT="$(dirname "$0")/postgres-image/knotless-postgres.sh"
# The start script is the ENTRYPOINT, so a service's `args` (-c fsync=off) reach postgres, as with the official image.
# The label holds the start script's checksum and this layout's version: an image built otherwise is built again.
POSTGRES_VERSION="entrypoint-$(cksum < "$START_SCRIPT" | cut -d' ' -f1)"
if [ "${KNOTLESS_SKIP_POSTGRES:-}" = 1 ]; then
  say "not building $POSTGRES_IMAGE (KNOTLESS_SKIP_POSTGRES=1)"
elif podman image exists "$POSTGRES_IMAGE" 2>/dev/null && [ "$(podman image inspect --format "{{index .Labels \"$POSTGRES_LABEL\"}}" "$POSTGRES_IMAGE" 2>/dev/null)" = "$POSTGRES_VERSION" ]; then
  say "image $POSTGRES_IMAGE already present"
else
  command -v debootstrap >/dev/null 2>&1 || fail "debootstrap is missing (it is installed with the Debian image above)"
  mirror=$(read_debian_mirror)
  [ -n "$mirror" ] || fail "no bookworm mirror for debootstrap"
  say "building $POSTGRES_IMAGE with debootstrap --variant=minbase --include=postgresql bookworm from $mirror (about a minute more than the Debian image: PostgreSQL and its libraries)"
  pg=$(mktemp -d)
  trap 'rm -rf "$pg" ${debian:+"$debian"} ${work:+"$work"}' EXIT
  debootstrap --variant=minbase --include=postgresql,zstd bookworm "$pg/rootfs" "$mirror" >"$pg/debootstrap.log" 2>&1 ||
    fail "debootstrap failed; the end of its log: $(tail -n 5 "$pg/debootstrap.log")"
  # The package's own cluster (/var/lib/postgresql/15/main) is not used: the start script makes a fresh one per container.
  rm -rf "$pg/rootfs/var/lib/apt/lists/"* "$pg/rootfs/var/cache/apt/archives/"*.deb "$pg/rootfs/var/lib/postgresql/"*/main
  install -m 0755 "$START_SCRIPT" "$pg/rootfs/usr/local/bin/knotless-postgres"
  ls "$pg"/rootfs/usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || fail "debootstrap --include=postgresql left no postgres server in the image"
  tar -C "$pg/rootfs" -cf "$pg/rootfs.tar" .
  podman import --quiet --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change 'ENTRYPOINT ["knotless-postgres"]' \
    --change "LABEL $POSTGRES_LABEL=$POSTGRES_VERSION" "$pg/rootfs.tar" "$POSTGRES_IMAGE" >/dev/null ||
    fail "podman import of $POSTGRES_IMAGE failed"
  rm -rf "$pg"
  say "imported $POSTGRES_IMAGE"
fi

say "checking that a container runs"
out=$(podman run --rm "$IMAGE" sh -c 'echo ok' 2>&1) || fail "podman run failed: $out"
[ "$out" = ok ] || fail "podman run printed '$out' instead of 'ok'"
out=$(podman run --rm "$DEBIAN_IMAGE" bash -c 'tar --version | head -n 1; command -v zstd' 2>&1) || fail "podman run of $DEBIAN_IMAGE failed: $out"
case "$out" in "tar (GNU tar)"*/usr/bin/zstd) ;; *) fail "$DEBIAN_IMAGE printed '$out' instead of GNU tar's version and /usr/bin/zstd" ;; esac
say "ready: podman runs $IMAGE and $DEBIAN_IMAGE"
