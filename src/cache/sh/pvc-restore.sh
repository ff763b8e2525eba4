# Restores one cache entry from the claim at / (rendered by buildPvcRestoreCommand in src/cache/pvc-scripts.ts): reads
# the entry's compression (an image without zstd says `no-decoder zstd` at once and reads nothing), hard-links the
# archive to a private name (an eviction meanwhile cannot take it away), checks its size and sha256 against the
# metadata before a byte is extracted, then marks the entry used and extracts at /.
# Arguments: $1 the repository's hash, $2 the key's hash, $3 a nonce. stdout, last: `PVC_RESULT_TAG` and one of
# `restored BYTES`, `missing`, `no-decoder zstd`, `corrupt WHY` (the entry removed), `failed WHY`.
d=$CACHE_ROOT/$1; a=$d/$2.tar.gz; m=$d/$2.meta; t=$d/.restore-$2-$3-$$
[ -f "$m" ] || { say missing; exit 0; }
case $(field compression "$m") in
  gzip) z="gunzip -c" ;;
  zstd) command -v zstd > /dev/null 2>&1 || { say no-decoder zstd; exit 0; }; z="zstd -dcq" ;;
  *) say failed "the entry's compression is not gzip or zstd"; exit 0 ;;
esac
want=$(field sha256 "$m"); wantb=$(field bytes "$m")
ln "$a" "$t" 2>/dev/null || { say missing; exit 0; }
got=$(digest "$t"); gotb=$(size "$t")
if [ -z "$want" ] || [ "$got" != "$want" ] || [ "$gotb" != "$wantb" ]; then
  rm -f "$t"
  if [ -z "$want" ] || grep -qx "sha256 $want" "$m" 2>/dev/null; then rm -f "$m" "$a"; fi
  say corrupt "the archive has $gotb bytes with sha256 $got, its metadata says $wantb bytes with sha256 ${want:-none}; the entry was removed"
  exit 0
fi
touch -c "$m"
{ $z "$t"; echo $? > "$t.rc"; } | tar -xf - -C /
xr=$?; zr=$(cat "$t.rc" 2>/dev/null); rm -f "$t" "$t.rc"
[ "$zr" = 0 ] || { say failed "${z%% *} exited ${zr:-without a status}"; exit 0; }
[ $xr = 0 ] || { say failed "tar exited $xr"; exit 0; }
say restored "$gotb"
