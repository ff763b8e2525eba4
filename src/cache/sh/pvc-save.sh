# Saves paths under a key on the claim unless the key exists (rendered by buildPvcSaveCommand in
# src/cache/pvc-scripts.ts). Packs the paths that exist into a temporary archive (`zstd -1` where the image has zstd,
# else `gzip -1`; the metadata's `compression` says which), then commits: `ln` of the archive to its final name is the
# exclusive step (it fails when the name exists, on busybox and GNU alike), and only its winner renames the metadata
# into place, which makes the entry visible. A loser, or a save that finds the entry there, says `exists`.
# Arguments: $1 the repository's hash, $2 the key's hash, $3 a nonce, $4 the most bytes kept, $5 createdAt (epoch ms),
# $6 the repository, $7 the key, then the absolute paths. stdout, last: `PVC_RESULT_TAG` and one of
# `saved BYTES SHA256`, `exists`, `empty`, `too-large BYTES MAX`, `failed WHY`. Settings: PVC_META_VERSION_LINE,
# STALE_ORPHAN_SECONDS.
d=$CACHE_ROOT/$1; a=$d/$2.tar.gz; m=$d/$2.meta; t=$d/.tmp-$2-$3-$$
max=$4; created=$5; repo=$6; key=$7
shift 7
[ -f "$m" ] && { say exists; exit 0; }
mkdir -p "$d" || { say failed "cannot create $d"; exit 0; }
n=$#
for p; do
  if [ -e "$p" ] || [ -L "$p" ]; then set -- "$@" "${p#/}"; else echo "knotless: cache path $p does not exist; saving without it" >&2; fi
done
shift $n
[ $# -gt 0 ] || { say empty; exit 0; }
clean() { rm -f "$t.tar.gz" "$t.meta" "$t.rc"; }
if command -v zstd > /dev/null 2>&1; then c=zstd; z="zstd -1 -q -c --check"; else c=gzip; z="gzip -1 -c"; fi
{ tar -cf - -C / "$@"; echo $? > "$t.rc"; } | $z > "$t.tar.gz"
zr=$?; xr=$(cat "$t.rc" 2>/dev/null)
if [ "$xr" != 0 ] || [ $zr != 0 ]; then clean; say failed "tar exited ${xr:-without a status}, $c $zr"; exit 0; fi
b=$(size "$t.tar.gz"); s=$(digest "$t.tar.gz")
[ -n "$s" ] || { clean; say failed "sha256sum failed"; exit 0; }
[ "$b" -le "$max" ] || { clean; say too-large "$b" "$max"; exit 0; }
printf '%s\nrepo %s\nbytes %s\nsha256 %s\ncompression %s\ncreatedAt %s\nkey %s\n' "$PVC_META_VERSION_LINE" "$repo" "$b" "$s" "$c" "$created" "$key" > "$t.meta" || { clean; say failed "cannot write the metadata"; exit 0; }
touch "$t.tar.gz"
commit() {
  ln "$t.tar.gz" "$a" 2>/dev/null || return 1
  if mv -f "$t.meta" "$m"; then say saved "$b" "$s"; else rm -f "$a"; say failed "cannot install the metadata"; fi
}
if ! commit; then
  u=$(mtime "$a") || u=0
  if [ ! -f "$m" ] && [ $(($(date +%s) - u)) -gt "$STALE_ORPHAN_SECONDS" ]; then
    echo "knotless: removing $a, left without metadata by a save that died" >&2
    rm -f "$a"; commit || say exists
  else say exists; fi
fi
clean
