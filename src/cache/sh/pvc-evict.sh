# Evicts cache entries (rendered by buildPvcEvictCommand in src/cache/pvc-scripts.ts) over the repository directories
# the pod sees (a run's pod mounts only its own, so the budget is each repository's): sweeps dead temporary files and
# orphaned archives, then removes entries, least recently used first, until the archives take at most MAXBYTES. Its
# list file goes in a repository directory: CACHE_ROOT itself is the image's, not the claim's, and may not be writable.
# Arguments: $1 MAXBYTES, $2 a nonce. stdout, last: `PVC_RESULT_TAG evicted <entries> <bytes freed> <bytes left>` or
# `PVC_RESULT_TAG failed WHY`. Settings: STALE_TEMP_SECONDS, STALE_ORPHAN_SECONDS.
max=$1; now=$(date +%s); l=
for r in "$CACHE_ROOT"/*/; do [ -d "$r" ] && l=$r.evict-$2-$$; done
[ -n "$l" ] || { say evicted 0 0 0; exit 0; }
for f in "$CACHE_ROOT"/*/.tmp-* "$CACHE_ROOT"/*/.restore-*; do
  u=$(mtime "$f") || continue
  [ $((now - u)) -gt "$STALE_TEMP_SECONDS" ] && rm -f "$f"
done
for f in "$CACHE_ROOT"/*/*.tar.gz; do
  [ -f "${f%.tar.gz}.meta" ] && continue
  u=$(mtime "$f") || continue
  [ $((now - u)) -gt "$STALE_ORPHAN_SECONDS" ] && rm -f "$f"
done
for m in "$CACHE_ROOT"/*/*.meta; do
  u=$(mtime "$m") || continue
  b=$(size "${m%.meta}.tar.gz") || b=0
  echo "$u ${b:-0} $m"
done | sort -n > "$l" || { say failed "cannot write $l"; exit 0; }
total=0
while read -r u b m; do total=$((total + b)); done < "$l"
n=0; freed=0
while read -r u b m; do
  [ $total -gt "$max" ] || break
  rm -f "$m" "${m%.meta}.tar.gz"
  total=$((total - b)); freed=$((freed + b)); n=$((n + 1))
done < "$l"
rm -f "$l"
say evicted $n $freed $total
