# Marks a cache entry used now (LRU: its metadata file's mtime; rendered by buildPvcTouchCommand in
# src/cache/pvc-scripts.ts). Arguments: $1 the repository's hash, $2 the key's hash.
# stdout, last: `PVC_RESULT_TAG touched` or `PVC_RESULT_TAG missing`.
m=$CACHE_ROOT/$1/$2.meta
if [ -f "$m" ] && touch -c "$m"; then say touched; else say missing; fi
