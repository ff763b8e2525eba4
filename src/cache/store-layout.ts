// Where the host directory store keeps what: entry and temp file paths from repository and key, names checked first.
//
// Layout under the store's directory (`--cache-dir`):
//   v1/repos/<sha256(repo)>/<sha256(key)>.entry   one file per saved entry: the archive, then its metadata trailer
//   v1/tmp/<random>.part                          saves in progress (and entries being removed), linked into place
// Names are hex digests, so no repository or key string (`..`, `/`, 512 characters of anything) reaches a path;
// the repository and key themselves are kept in the entry's trailer (entry-file.ts) for listing.
import { homedir } from "node:os";
import { createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import { InputError } from "../core/errors.js";

/** Longest key, and longest repository name, the store accepts (in UTF-16 code units, as JS counts). */
export const MAX_NAME_LENGTH = 512;
export const ENTRY_SUFFIX = ".entry";
export const TEMP_SUFFIX = ".part";

/** Throws InputError unless `value` is a non-empty string of at most MAX_NAME_LENGTH characters without NUL. */
export function checkCacheName(what: "key" | "repository" | "restore key", value: string): void {
  if (typeof value !== "string" || value === "") throw new InputError(`a cache ${what} must not be empty`);
  if (value.length > MAX_NAME_LENGTH)
    throw new InputError(`a cache ${what} must be at most ${MAX_NAME_LENGTH} characters, got ${value.length}`);
  if (value.includes("\0"))
    throw new InputError(`a cache ${what} must not contain a NUL character: ${JSON.stringify(value)}`);
}

export function hashName(value: string): string {
  return createHash("sha256").update(value, "utf8").digest("hex");
}

export function reposDir(root: string): string {
  return join(root, "v1", "repos");
}

export function tempDir(root: string): string {
  return join(root, "v1", "tmp");
}

export function repoDir(root: string, repo: string): string {
  return join(reposDir(root), hashName(repo));
}

export function entryPath(root: string, repo: string, key: string): string {
  return join(repoDir(root, repo), `${hashName(key)}${ENTRY_SUFFIX}`);
}

/** A fresh name in the temp directory: 128 random bits, so two processes never pick the same one. */
export function newTempPath(root: string): string {
  return join(tempDir(root), `${randomBytes(16).toString("hex")}${TEMP_SUFFIX}`);
}

/**
 * `$XDG_CACHE_HOME/knotless-runner-k8s` (when it is an absolute path, as the XDG spec asks), else
 * `$HOME/.cache/knotless-runner-k8s`, else under the account's home (`accountHome`, os.homedir() by default).
 */
export function defaultCacheDir(
  env: Readonly<Record<string, string | undefined>>,
  accountHome: () => string = homedir,
): string {
  const xdg = env.XDG_CACHE_HOME;
  if (xdg !== undefined && xdg.startsWith("/")) return join(xdg, "knotless-runner-k8s");
  const home = env.HOME !== undefined && env.HOME.startsWith("/") ? env.HOME : accountHome();
  if (!home.startsWith("/"))
    throw new InputError(
      "neither XDG_CACHE_HOME nor HOME nor the account's home is an absolute path: give the cache directory with --cache-dir",
    );
  return join(home, ".cache", "knotless-runner-k8s");
}
