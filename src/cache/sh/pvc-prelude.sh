# What every PVC cache command shares (rendered before each by src/cache/pvc-scripts.ts): a beat while it runs, and
# `say` (the one result line, last on stdout), `mtime FILE`, `size FILE`, `digest FILE` (sha256), `field NAME FILE`
# (a metadata line's value). Settings: CACHE_ROOT (the claim's mount), PVC_RESULT_TAG; beat.sh's.
say() { echo "$PVC_RESULT_TAG $*"; }
mtime() { stat -c %Y "$1" 2>/dev/null; }
size() { stat -c %s "$1" 2>/dev/null || { wc -c < "$1"; } 2>/dev/null; }
# shellcheck disable=SC2046 # split on purpose: sha256sum prints the digest, then a name
digest() { set -- $(sha256sum < "$1") && echo "$1"; }
field() { sed -n "s/^$1 //p" "$2" 2>/dev/null | head -n 1; }
beat_while_exec_runs
