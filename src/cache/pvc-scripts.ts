// Pure builders of the PVC cache backend's in-pod commands (list, restore, save, touch, evict: src/cache/sh/*.sh): POSIX sh for busybox and Debian.
import { buildBeatSettings } from "../pod/keep-alive.js";
import { renderShellProgram } from "../pod/render-sh.js";
import { BEAT_SH } from "../pod/sh/embedded.gen.js";
import {
  PVC_EVICT_SH,
  PVC_LIST_SH,
  PVC_PRELUDE_SH,
  PVC_RESTORE_SH,
  PVC_SAVE_SH,
  PVC_TOUCH_SH,
} from "./sh/embedded.gen.js";
import { hashCacheName, PVC_CACHE_MOUNT_PATH, PVC_META_VERSION_LINE } from "../pod/pvc-layout.js";

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

/**
 * `sh -c SCRIPT NAME ARGS...` of src/cache/sh/pvc-NAME.sh after the shared prelude: values travel as arguments, never
 * spliced into the script; a runner exec, so it beats.
 */
function buildCommand(name: string, script: string, args: readonly string[]): string[] {
  const settings = {
    ...buildBeatSettings(),
    CACHE_ROOT: PVC_CACHE_MOUNT_PATH,
    PVC_RESULT_TAG,
    PVC_META_VERSION_LINE,
    STALE_TEMP_SECONDS,
    STALE_ORPHAN_SECONDS,
  };
  return ["sh", "-c", renderShellProgram(settings, BEAT_SH, PVC_PRELUDE_SH, script), `knotless-cache-${name}`, ...args];
}

function checkText(what: string, value: string): void {
  if (value.length === 0) throw new RangeError(`the cache ${what} is empty`);
  // A line break would end the metadata line early; NUL cannot be an argument.
  if (/[\r\n\0]/.test(value))
    throw new RangeError(`the cache ${what} ${JSON.stringify(value)} holds a line break or NUL`);
}

function checkNonce(nonce: string): void {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(nonce))
    throw new RangeError(`the cache nonce ${JSON.stringify(nonce)} is not 1 to 64 of [A-Za-z0-9_-]`);
}

function checkBytes(maxBytes: number): void {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0)
    throw new RangeError(`the cache byte budget ${maxBytes} is not a whole number of bytes`);
}

/** An absolute path, not /, with no `.`/`..` segment, not inside the claim itself. */
function checkPath(path: string): void {
  checkText("path", path);
  const segments = path.split("/").slice(1);
  if (!path.startsWith("/") || segments.every((s) => s === ""))
    throw new RangeError(`the cache path ${JSON.stringify(path)} is not an absolute path below /`);
  if (segments.some((s) => s === "." || s === ".."))
    throw new RangeError(`the cache path ${JSON.stringify(path)} has a . or .. segment`);
  if (path === PVC_CACHE_MOUNT_PATH || path.startsWith(`${PVC_CACHE_MOUNT_PATH}/`))
    throw new RangeError(`the cache path ${path} is inside the cache claim`);
}

/** Lists one repository's entries; parse with parsePvcList. */
export function buildPvcListCommand(repo: string): string[] {
  checkText("repository", repo);
  return buildCommand("list", PVC_LIST_SH, [hashCacheName(repo)]);
}

/** Restores the entry of `key` into / after checking its checksum in the pod; parse with parsePvcRestore. */
export function buildPvcRestoreCommand(repo: string, key: string, nonce: string): string[] {
  checkText("repository", repo);
  checkText("key", key);
  checkNonce(nonce);
  return buildCommand("restore", PVC_RESTORE_SH, [hashCacheName(repo), hashCacheName(key), nonce]);
}

/** Saves the paths under `key` unless the key exists; parse with parsePvcSave. */
export function buildPvcSaveCommand(input: PvcSaveInput): string[] {
  checkText("repository", input.repo);
  checkText("key", input.key);
  checkNonce(input.nonce);
  checkBytes(input.maxBytes);
  if (!Number.isSafeInteger(input.createdAt) || input.createdAt < 0)
    throw new RangeError(`the cache entry's creation time ${input.createdAt} is not epoch milliseconds`);
  if (input.paths.length === 0) throw new RangeError("a cache save needs at least one path");
  input.paths.forEach(checkPath);
  const args = [
    hashCacheName(input.repo),
    hashCacheName(input.key),
    input.nonce,
    String(input.maxBytes),
    String(input.createdAt),
    input.repo,
    input.key,
    ...input.paths,
  ];
  return buildCommand("save", PVC_SAVE_SH, args);
}

/** Marks the entry of `key` used now; parse with parsePvcTouch. */
export function buildPvcTouchCommand(repo: string, key: string): string[] {
  checkText("repository", repo);
  checkText("key", key);
  return buildCommand("touch", PVC_TOUCH_SH, [hashCacheName(repo), hashCacheName(key)]);
}

/** Evicts least recently used entries of what the pod sees of the claim (its repository's directory) until its archives take at most `maxBytes`; parse with parsePvcEvict. */
export function buildPvcEvictCommand(maxBytes: number, nonce: string): string[] {
  checkBytes(maxBytes);
  checkNonce(nonce);
  return buildCommand("evict", PVC_EVICT_SH, [String(maxBytes), nonce]);
}
