# The helper's cache and artifact subcommands (sourced into the helper before its dispatch; src/pod/cache-script.ts
# says which tools busybox and Debian give them). Paths come relative to / (`work/node_modules`).
#   cache_restore COMPRESSION PATH...  stdin: the archive. stdout: CACHE_RESTORED_TAG, or
#       CACHE_RESTORE_FAILED_TAG (`gunzip=N tar=N`; the absent paths removed again), or CACHE_NO_DECODER_TAG zstd.
#   cache_save PATH...                 stdout: the archive. stderr: CACHE_MISSING_TAG PATH per absent path, then
#       CACHE_SAVED_TAG `tar=N zstd=N` (or `gzip=N`) or `none`, last.
#   list_files DIR...                  stdout: the regular files, NUL-terminated. stderr: FILES_LISTED_TAG, last.
#   pack_files DIR                     stdin: names relative to DIR. stdout: tar. stderr: FILES_PACKED_TAG tar=N, last.
# Settings: R (the runner's directory) and the tags above, set by the renderer from src/pod/cache-script.ts.

cache_restore() { # COMPRESSION PATH...: decompress | tar -x at / from stdin; on failure removes the paths that were absent before
  case $1 in
    gzip) d="gunzip -c" ;;
    zstd) command -v zstd > /dev/null 2>&1 || { echo "$CACHE_NO_DECODER_TAG zstd"; cat > /dev/null; return 0; }; d="zstd -dcq" ;;
    none) d="cat" ;;
    *) echo "$CACHE_RESTORE_FAILED_TAG compression=$1 tar=none"; return 1 ;;
  esac
  shift
  a=$R/cache-absent.$$; g=$R/cache-decode.$$
  : > "$a"
  for p; do [ -e "/$p" ] || [ -L "/$p" ] || printf '%s\n' "$p" >> "$a"; done
  { $d; echo $? > "$g"; } | tar -xf - -C /
  tr=$?; gz=$(cat "$g" 2>/dev/null); rm -f "$g"
  cat > /dev/null
  if [ "$gz" = 0 ] && [ $tr = 0 ]; then rm -f "$a"; echo "$CACHE_RESTORED_TAG"; return 0; fi
  while IFS= read -r p; do [ -z "$p" ] || rm -rf "/${p:?}"; done < "$a"
  rm -f "$a"
  echo "$CACHE_RESTORE_FAILED_TAG ${d%% *}=${gz:-none} tar=$tr"
  return 1
}

cache_save() { # PATH...: tar -c of those that exist (relative to /) | zstd -1 (else gzip -1) on stdout; what it did on stderr, last
  n=$#
  for p; do
    if [ -e "/$p" ] || [ -L "/$p" ]; then set -- "$@" "$p"; else printf '%s %s\n' "$CACHE_MISSING_TAG" "$p" >&2; fi
  done
  shift $n
  [ $# -gt 0 ] || { echo "$CACHE_SAVED_TAG none" >&2; return 0; }
  t=$R/cache-tar.$$
  if command -v zstd > /dev/null 2>&1; then
    z=zstd; { tar -cf - -C / "$@"; echo $? > "$t"; } | zstd -1 -q -c --check
  else
    z=gzip; { tar -cf - -C / "$@"; echo $? > "$t"; } | gzip -1
  fi
  gz=$?; tr=$(cat "$t" 2>/dev/null); rm -f "$t"
  echo "$CACHE_SAVED_TAG tar=${tr:-none} $z=$gz" >&2
}

list_files() { # PATH...: the regular files at or under each PATH that exists, NUL-terminated, on stdout
  for d; do [ -e "$d" ] && find "$d" -type f -print0; done
  echo "$FILES_LISTED_TAG" >&2
}

pack_files() { # DIR: a tar on stdout (without -T: several, one after the other) of exactly the files named on stdin (one per line, relative to DIR)
  cd "$1" || exit
  if tar --verbatim-files-from -cf - -T /dev/null > /dev/null 2>&1; then
    tar -cf - --no-recursion --verbatim-files-from -T -
  else
    # Not a loop of set -- "$@" "$f": quadratic in sh (20,000 names took busybox sh 2 min 20 s), and one argv can
    # outgrow ARG_MAX. xargs exits 123 when a tar run failed.
    tr '\n' '\0' | xargs -0 -r tar -cf - --no-recursion --
  fi
  rc=$?
  echo "$FILES_PACKED_TAG tar=$rc" >&2
  return $rc
}
