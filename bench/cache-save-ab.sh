#!/bin/sh
# What a cache save's gap to plain `kubectl exec … > file` is made of: the same in-pod tar | zstd into the shell's
# file, into node dropping it, through cat, from the helper's own cache-save, and into the directory store's writer as
# the runner saves (bench/save-sink.ts). Needs a kept Debian pod holding /work/deps (a `run --keep` of the
# local-cache bench's workflow) and `npm run build`. Usage: POD=NAME KUBECONFIG=FILE [K=kubectl] [ROUNDS=3] sh bench/cache-save-ab.sh
set -eu
K=${K:-kubectl}
ROUNDS=${ROUNDS:-3}
HERE=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
SAVE='tar -cf - -C / work/deps | zstd -1 -q -c --check'
ms() { s=$(date +%s%N); sh -c "$1" || { echo "failed: $1" >&2; exit 1; }; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
exec_save="$K exec $POD -c run -- sh -c '$SAVE'"
round=1
while [ "$round" -le "$ROUNDS" ]; do
  for v in plain none cat helper store; do
    case $v in
      plain) t=$(ms "$exec_save > $OUT/a") ;;
      cat) t=$(ms "$exec_save | cat > $OUT/a") ;;
      helper) t=$(ms "$K exec $POD -c run -- sh /knotless/helper.sh cache-save work/deps > $OUT/a 2>/dev/null") ;;
      *) t=$(ms "$exec_save | node $HERE/dist/bench/save-sink.js $v $OUT/store") ;;
    esac
    echo "round $round $v $t ms"
  done
  round=$((round + 1))
done
