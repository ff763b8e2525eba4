# Lists one repository's cache entries on the claim (rendered by buildPvcListCommand in src/cache/pvc-scripts.ts).
# Arguments: $1 the repository's hash. stdout: per entry `entry <key hash> <last use, epoch s>` then its metadata
# file's lines; then `PVC_RESULT_TAG listed <entries>`, last.
d=$CACHE_ROOT/$1; n=0
for m in "$d"/*.meta; do
  [ -f "$m" ] || continue
  u=$(mtime "$m") || continue
  h=${m##*/}
  echo "entry ${h%.meta} $u"
  n=$((n + 1))
  head -c 4096 "$m" | while IFS= read -r l || [ -n "$l" ]; do printf '%s\n' "$l"; done
done
say listed $n
