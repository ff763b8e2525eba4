// Pure builders of the PVC cache backend's in-pod commands (list, restore, save, touch, evict): POSIX sh for busybox and Debian.
import { buildBeatWhileExecRuns } from "../pod/keep-alive.js";
import { hashCacheName, PVC_CACHE_MOUNT_PATH, PVC_META_VERSION_LINE } from "./pvc-layout.js";

/**
 * Every command prints diagnostics on stderr and ends its stdout with exactly one result line that starts with this
 * tag (src/cache/pvc-output.ts reads it). An exec that ends without the line did not necessarily run: the parsers
 * refuse it rather than guess.
 */
export const PVC_RESULT_TAG = "knotless-cache";

/** A save or restore's temporary file untouched this long belongs to a dead pod: evict removes it. */
export const STALE_TEMP_SECONDS = 3600;
/**
 * An archive without its metadata file this long after it was linked belongs to a save that died between its two
 * renames: a later save of the key replaces it, evict removes it. The two renames are microseconds apart.
 */
export const STALE_ORPHAN_SECONDS = 300;

/** Shell functions every command shares. `digest` and `size` read a file; `field NAME FILE` reads a metadata line. */
const PRELUDE = `C=${PVC_CACHE_MOUNT_PATH}
say() { echo "${PVC_RESULT_TAG} $*"; }
mtime() { stat -c %Y "$1" 2>/dev/null; }
size() { stat -c %s "$1" 2>/dev/null || { wc -c < "$1"; } 2>/dev/null; }
digest() { set -- $(sha256sum < "$1") && echo "$1"; }
field() { sed -n "s/^$1 //p" "$2" 2>/dev/null | head -n 1; }
`;

/** `entry <key hash> <last use, epoch s>` then the metadata file's lines, per entry; then `listed <entries>`. */
const LIST_SCRIPT = `${PRELUDE}d=$C/$1; n=0
for m in "$d"/*.meta; do
  [ -f "$m" ] || continue
  u=$(mtime "$m") || continue
  h=\${m##*/}
  echo "entry \${h%.meta} $u"
  n=$((n + 1))
  head -c 4096 "$m" | while IFS= read -r l || [ -n "$l" ]; do printf '%s\\n' "$l"; done
done
say listed $n
`;

/**
 * Reads the entry's compression (an image without zstd says \`no-decoder zstd\` at once and reads nothing), hard-links
 * the archive to a private name (an eviction meanwhile cannot take it away), checks its size and sha256 against the
 * metadata before a byte is extracted, then marks the entry used and extracts at /.
 */
const RESTORE_SCRIPT = `${PRELUDE}d=$C/$1; a=$d/$2.tar.gz; m=$d/$2.meta; t=$d/.restore-$2-$3-$$
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
  say corrupt "the archive has $gotb bytes with sha256 $got, its metadata says $wantb bytes with sha256 \${want:-none}; the entry was removed"
  exit 0
fi
touch -c "$m"
{ $z "$t"; echo $? > "$t.rc"; } | tar -xf - -C /
xr=$?; zr=$(cat "$t.rc" 2>/dev/null); rm -f "$t" "$t.rc"
[ "$zr" = 0 ] || { say failed "\${z%% *} exited \${zr:-without a status}"; exit 0; }
[ $xr = 0 ] || { say failed "tar exited $xr"; exit 0; }
say restored $gotb
`;

/**
 * Packs the paths that exist into a temporary archive (\`zstd -1\` where the image has zstd, else \`gzip -1\`; the
 * metadata's \`compression\` says which), then commits: \`ln\` of the archive to its final name is the
 * exclusive step (it fails when the name exists, on busybox and GNU alike), and only its winner renames the metadata
 * into place, which makes the entry visible. A loser, or a save that finds the entry there, says \`exists\`.
 */
const SAVE_SCRIPT = `${PRELUDE}d=$C/$1; a=$d/$2.tar.gz; m=$d/$2.meta; t=$d/.tmp-$2-$3-$$
max=$4; created=$5; repo=$6; key=$7
shift 7
[ -f "$m" ] && { say exists; exit 0; }
mkdir -p "$d" || { say failed "cannot create $d"; exit 0; }
n=$#
for p; do
  if [ -e "$p" ] || [ -L "$p" ]; then set -- "$@" "\${p#/}"; else echo "knotless: cache path $p does not exist; saving without it" >&2; fi
done
shift $n
[ $# -gt 0 ] || { say empty; exit 0; }
clean() { rm -f "$t.tar.gz" "$t.meta" "$t.rc"; }
if command -v zstd > /dev/null 2>&1; then c=zstd; z="zstd -1 -q -c --check"; else c=gzip; z="gzip -1 -c"; fi
{ tar -cf - -C / "$@"; echo $? > "$t.rc"; } | $z > "$t.tar.gz"
zr=$?; xr=$(cat "$t.rc" 2>/dev/null)
if [ "$xr" != 0 ] || [ $zr != 0 ]; then clean; say failed "tar exited \${xr:-without a status}, $c $zr"; exit 0; fi
b=$(size "$t.tar.gz"); s=$(digest "$t.tar.gz")
[ -n "$s" ] || { clean; say failed "sha256sum failed"; exit 0; }
[ "$b" -le "$max" ] || { clean; say too-large $b $max; exit 0; }
printf '%s\\nrepo %s\\nbytes %s\\nsha256 %s\\ncompression %s\\ncreatedAt %s\\nkey %s\\n' '${PVC_META_VERSION_LINE}' "$repo" "$b" "$s" "$c" "$created" "$key" > "$t.meta" || { clean; say failed "cannot write the metadata"; exit 0; }
touch "$t.tar.gz"
commit() {
  ln "$t.tar.gz" "$a" 2>/dev/null || return 1
  if mv -f "$t.meta" "$m"; then say saved $b $s; else rm -f "$a"; say failed "cannot install the metadata"; fi
}
if ! commit; then
  u=$(mtime "$a") || u=0
  if [ ! -f "$m" ] && [ $(($(date +%s) - u)) -gt ${STALE_ORPHAN_SECONDS} ]; then
    echo "knotless: removing $a, left without metadata by a save that died" >&2
    rm -f "$a"; commit || say exists
  else say exists; fi
fi
clean
`;

/** Marks an entry used now (LRU): its metadata file's mtime. */
const TOUCH_SCRIPT = `${PRELUDE}m=$C/$1/$2.meta
if [ -f "$m" ] && touch -c "$m"; then say touched; else say missing; fi
`;

/**
 * Over the repository directories the pod sees: a run's pod mounts only its own (src/cache/pvc-layout.ts's
 * formatRepoMount), so the budget is each repository's. Sweeps dead temporary files and orphaned archives, then
 * removes entries, least recently used first, until the archives take at most MAXBYTES. Its list file goes in a
 * repository directory: /knotless-cache itself is the image's, not the claim's, and may not be writable.
 */
const EVICT_SCRIPT = `${PRELUDE}max=$1; now=$(date +%s); l=
for r in $C/*/; do [ -d "$r" ] && l=$r.evict-$2-$$; done
[ -n "$l" ] || { say evicted 0 0 0; exit 0; }
for f in $C/*/.tmp-* $C/*/.restore-*; do
  u=$(mtime "$f") || continue
  [ $((now - u)) -gt ${STALE_TEMP_SECONDS} ] && rm -f "$f"
done
for f in $C/*/*.tar.gz; do
  [ -f "\${f%.tar.gz}.meta" ] && continue
  u=$(mtime "$f") || continue
  [ $((now - u)) -gt ${STALE_ORPHAN_SECONDS} ] && rm -f "$f"
done
for m in $C/*/*.meta; do
  u=$(mtime "$m") || continue
  b=$(size "\${m%.meta}.tar.gz") || b=0
  echo "$u \${b:-0} $m"
done | sort -n > "$l" || { say failed "cannot write $l"; exit 0; }
total=0
while read -r u b m; do total=$((total + b)); done < "$l"
n=0; freed=0
while read -r u b m; do
  [ $total -gt $max ] || break
  rm -f "$m" "\${m%.meta}.tar.gz"
  total=$((total - b)); freed=$((freed + b)); n=$((n + 1))
done < "$l"
rm -f "$l"
say evicted $n $freed $total
`;

/** What a save is of: the entry's repository and key, the paths in the pod, and what the metadata records. */
export interface PvcSaveInput {
  readonly repo: string;
  readonly key: string;
  /** Absolute paths in the pod; the ones that do not exist are left out (with a line on stderr). */
  readonly paths: readonly string[];
  /** An archive larger than this is not kept (`too-large`): it could never fit the claim's budget. */
  readonly maxBytes: number;
  /** Epoch ms, the runner's clock: selectEntry orders fallbacks by it. */
  readonly createdAt: number;
  /** Makes the temporary names of this save unique across pods (the run id, say): [A-Za-z0-9_-], 1 to 64. */
  readonly nonce: string;
}

/** `sh -c SCRIPT NAME ARGS...`: values travel as arguments, never spliced into the script; a runner exec, so it beats. */
function buildCommand(name: string, script: string, args: readonly string[]): string[] {
  return ["sh", "-c", `${buildBeatWhileExecRuns()}\n${script}`, `knotless-cache-${name}`, ...args];
}

function checkText(what: string, value: string): void {
  if (value.length === 0) throw new RangeError(`the cache ${what} is empty`);
  // A line break would end the metadata line early; NUL cannot be an argument.
  if (/[\r\n\0]/.test(value)) throw new RangeError(`the cache ${what} ${JSON.stringify(value)} holds a line break or NUL`);
}

function checkNonce(nonce: string): void {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(nonce)) throw new RangeError(`the cache nonce ${JSON.stringify(nonce)} is not 1 to 64 of [A-Za-z0-9_-]`);
}

function checkBytes(maxBytes: number): void {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new RangeError(`the cache byte budget ${maxBytes} is not a whole number of bytes`);
}

/** An absolute path, not /, with no `.`/`..` segment, not inside the claim itself. */
function checkPath(path: string): void {
  checkText("path", path);
  const segments = path.split("/").slice(1);
  if (!path.startsWith("/") || segments.every((s) => s === "")) throw new RangeError(`the cache path ${JSON.stringify(path)} is not an absolute path below /`);
  if (segments.some((s) => s === "." || s === "..")) throw new RangeError(`the cache path ${JSON.stringify(path)} has a . or .. segment`);
  if (path === PVC_CACHE_MOUNT_PATH || path.startsWith(`${PVC_CACHE_MOUNT_PATH}/`)) throw new RangeError(`the cache path ${path} is inside the cache claim`);
}

/** Lists one repository's entries; parse with parsePvcList. */
export function buildPvcListCommand(repo: string): string[] {
  checkText("repository", repo);
  return buildCommand("list", LIST_SCRIPT, [hashCacheName(repo)]);
}

/** Restores the entry of `key` into / after checking its checksum in the pod; parse with parsePvcRestore. */
export function buildPvcRestoreCommand(repo: string, key: string, nonce: string): string[] {
  checkText("repository", repo);
  checkText("key", key);
  checkNonce(nonce);
  return buildCommand("restore", RESTORE_SCRIPT, [hashCacheName(repo), hashCacheName(key), nonce]);
}

/** Saves the paths under `key` unless the key exists; parse with parsePvcSave. */
export function buildPvcSaveCommand(input: PvcSaveInput): string[] {
  checkText("repository", input.repo);
  checkText("key", input.key);
  checkNonce(input.nonce);
  checkBytes(input.maxBytes);
  if (!Number.isSafeInteger(input.createdAt) || input.createdAt < 0) throw new RangeError(`the cache entry's creation time ${input.createdAt} is not epoch milliseconds`);
  if (input.paths.length === 0) throw new RangeError("a cache save needs at least one path");
  input.paths.forEach(checkPath);
  const args = [hashCacheName(input.repo), hashCacheName(input.key), input.nonce, String(input.maxBytes), String(input.createdAt), input.repo, input.key, ...input.paths];
  return buildCommand("save", SAVE_SCRIPT, args);
}

/** Marks the entry of `key` used now; parse with parsePvcTouch. */
export function buildPvcTouchCommand(repo: string, key: string): string[] {
  checkText("repository", repo);
  checkText("key", key);
  return buildCommand("touch", TOUCH_SCRIPT, [hashCacheName(repo), hashCacheName(key)]);
}

/** Evicts least recently used entries of what the pod sees of the claim (its repository's directory) until its archives take at most `maxBytes`; parse with parsePvcEvict. */
export function buildPvcEvictCommand(maxBytes: number, nonce: string): string[] {
  checkBytes(maxBytes);
  checkNonce(nonce);
  return buildCommand("evict", EVICT_SCRIPT, [String(maxBytes), nonce]);
}
