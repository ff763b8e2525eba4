// The helper's cache and artifact subcommands (src/pod/sh/cache.sh): POSIX sh that busybox (1.35/1.36) and Debian's GNU tools both run.
//
// What the two images give us, and so what this code may use:
// - tar: GNU tar 1.34 (bookworm) and busybox tar both create and extract to and from stdin with -C and take
//   --no-recursion; only GNU tar takes -T (Debian's busybox is built without it), so a list of files reaches busybox
//   tar as arguments, through xargs -0 (in both), which splits a long list over several tar runs whose archives follow
//   one another on stdout (the host reads them as one stream: TarParser's `concatenated`);
// - gzip/gunzip: in both; gzip takes -1 in both (busybox ignores the level when built without levels);
// - zstd: in the local cluster's Debian image (and most build images), not in busybox: a save uses \`zstd -1\` where
//   \`command -v zstd\` finds it (6x faster than gzip -1 at the same size, see README, Caches), else gzip -1; a restore
//   decompresses with what the entry records, and says at once when it would need a zstd the image lacks;
// - find: -type f and -print0 in both.
// Paths are handed over relative to `/` (`work/node_modules`), so no tar warns about a leading slash and the archive's
// members name where they land.
import type { CacheCompression } from "../workflow/cache-types.js";
import { POD_HELPER_PATH } from "../workflow/pod-paths.js";

/**
 * The line `cache-restore` prints on stdout once the decompressor (gunzip: the gzip trailer's CRC32 and length;
 * `zstd -d`: the frames' content checksums) and tar both exited 0.
 */
export const CACHE_RESTORED_TAG = "knotless-cache-restored";
/** The line `cache-restore` prints instead when either failed: `knotless-cache-failed gunzip=N tar=N` (`zstd=N`, `cat=N`). */
export const CACHE_RESTORE_FAILED_TAG = "knotless-cache-failed";
/**
 * The line `cache-restore` prints at once when the entry's decompressor is not in the image (`knotless-cache-no-decoder
 * zstd`); it then reads stdin to its end, unextracted: a command that exits with stdin unread can lose its output
 * (podman 4.3's exec lost this line one time in five), and the runner ends stdin once it sees the line.
 */
export const CACHE_NO_DECODER_TAG = "knotless-cache-no-decoder";
/** The line `cache-save` prints last on stderr: `knotless-cache-saved tar=N zstd=N` (or `gzip=N`: the compressor it used), or `knotless-cache-saved none`. */
export const CACHE_SAVED_TAG = "knotless-cache-saved";
/** One line per path `cache-save` skipped (absent in the pod): `knotless-cache-missing PATH`. */
export const CACHE_MISSING_TAG = "knotless-cache-missing";
/** The line `list-files` prints last on stderr once every directory was walked. */
export const FILES_LISTED_TAG = "knotless-files-listed";
/** The line `pack-files` prints last on stderr: `knotless-files-packed tar=N`. */
export const FILES_PACKED_TAG = "knotless-files-packed";

/** The tags src/pod/sh/cache.sh prints, as the helper's renderer (src/pod/helper-script.ts) sets them for it. */
export const CACHE_HELPER_SETTINGS = {
  CACHE_RESTORED_TAG,
  CACHE_RESTORE_FAILED_TAG,
  CACHE_NO_DECODER_TAG,
  CACHE_SAVED_TAG,
  CACHE_MISSING_TAG,
  FILES_LISTED_TAG,
  FILES_PACKED_TAG,
} as const;

const HELPER = POD_HELPER_PATH;

/** A pod path as the helper's commands take it: relative to `/`, without a trailing slash. */
export function toRootRelative(podPath: string): string {
  return podPath.replace(/^\/+/, "").replace(/\/+$/, "");
}

/** The argv of each cache and artifact call of the helper. */
export const cacheHelperCommand = {
  /**
   * Extracts a tar from stdin at `/`, decompressed as `compression` says; `paths` (absolute) are removed again on
   * failure if they were absent before.
   */
  restore: (compression: CacheCompression, paths: readonly string[]) => [
    "sh",
    HELPER,
    "cache-restore",
    compression,
    ...paths.map(toRootRelative),
  ],
  /** Writes `tar -c <paths that exist> | zstd -1` (or `gzip -1` without zstd) to stdout. */
  save: (paths: readonly string[]) => ["sh", HELPER, "cache-save", ...paths.map(toRootRelative)],
  /** Lists the regular files under the directories (absolute), NUL-terminated. */
  listFiles: (dirs: readonly string[]) => ["sh", HELPER, "list-files", ...dirs],
  /** Packs the files named on stdin, one per line, relative to `dir` (absolute). */
  packFiles: (dir: string) => ["sh", HELPER, "pack-files", dir],
} as const;

/**
 * What `cache-save` said on stderr: the paths it skipped, and the exit codes of tar and the compressor it named (or
 * that nothing existed). The compressor's name is the pod's word only: the host tells the archive's compression from
 * its bytes.
 */
export interface CacheSaveStatus {
  readonly missing: readonly string[];
  readonly outcome:
    | { readonly kind: "none" }
    | { readonly kind: "packed"; readonly tar: string; readonly compressor: string; readonly status: string }
    | undefined;
}

export function parseCacheSaveStatus(stderr: string): CacheSaveStatus {
  const missing: string[] = [];
  let outcome: CacheSaveStatus["outcome"];
  for (const line of stderr.split("\n")) {
    if (line.startsWith(`${CACHE_MISSING_TAG} `)) missing.push(`/${line.slice(CACHE_MISSING_TAG.length + 1)}`);
    else if (line === `${CACHE_SAVED_TAG} none`) outcome = { kind: "none" };
    else {
      const match = new RegExp(`^${CACHE_SAVED_TAG} tar=(\\S+) (gzip|zstd)=(\\S+)$`).exec(line);
      if (match) outcome = { kind: "packed", tar: match[1]!, compressor: match[2]!, status: match[3]! };
    }
  }
  return { missing, outcome };
}

/** The decompressor `cache-restore` said the image lacks (it read nothing then), or undefined. */
export function findMissingDecoder(stdout: string): string | undefined {
  const line = stdout.split("\n").find((text) => text.startsWith(`${CACHE_NO_DECODER_TAG} `));
  return line?.slice(CACHE_NO_DECODER_TAG.length + 1).trim();
}

/** Why `cache-restore`'s stdout does not prove the archive arrived whole and was extracted, or undefined when it does. */
export function checkCacheRestoreReply(stdout: string): string | undefined {
  const lines = stdout.split("\n").map((line) => line.trim());
  if (lines.includes(CACHE_RESTORED_TAG)) return undefined;
  const missing = findMissingDecoder(stdout);
  if (missing !== undefined) return `the pod has no ${missing} to decompress the entry`;
  const failed = lines.find((line) => line.startsWith(`${CACHE_RESTORE_FAILED_TAG} `));
  if (failed)
    return `the pod could not extract the archive (${failed.slice(CACHE_RESTORE_FAILED_TAG.length + 1)}): it was cut or corrupt, or a path could not be written`;
  return "the pod did not confirm the restore (the exec ended before its last line)";
}

/** The exit code `pack-files` reported for its tar, or undefined when it said nothing. */
export function parseFilesPacked(stderr: string): string | undefined {
  return new RegExp(`^${FILES_PACKED_TAG} tar=(\\S+)\\s*$`, "m").exec(stderr)?.[1];
}
