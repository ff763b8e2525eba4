// The `run` command's cache flags (--cache-dir, --cache-max-bytes, --cache-pvc, --no-cache) and the repository caches are keyed by.
import { createHash } from "node:crypto";
import { statSync } from "node:fs";
import { resolve } from "node:path";
import { defaultCacheDir } from "../cache/store-layout.js";
import { DNS_LABEL, readSize } from "../core/patterns.js";
import { InputError } from "../core/errors.js";
import type { CacheBackend } from "../executor/kubernetes/context.js";

export interface RawCacheOptions {
  cacheDir?: string;
  cacheMaxBytes?: string;
  cachePvc?: string;
  /** false with `--no-cache` (commander's negatable flag; true or absent without it). */
  cache?: boolean;
}

/** The cache store's size bound when --cache-max-bytes is not given. */
export const DEFAULT_CACHE_MAX_BYTES = "5Gi";

/** Where the repository key came from: --repo, else the checkout's absolute path, else (clone.skip) the workflow file's. */
export type CacheRepoSource = "--repo" | "checkout" | "workflow";

/** The cache flags, validated: given or not, a bad one is bad input, so a daemon's typo shows on its first run. */
export interface CacheFlags {
  readonly off: boolean;
  readonly store: { readonly kind: "dir"; readonly dir: string } | { readonly kind: "pvc"; readonly claim: string };
  readonly maxBytes: number;
}

/** Reads and checks the flags; touches nothing (the store makes its directory when it first saves). */
export function readCacheFlags(raw: RawCacheOptions, env: NodeJS.ProcessEnv): CacheFlags {
  const maxBytes = readSize(raw.cacheMaxBytes ?? DEFAULT_CACHE_MAX_BYTES, "--cache-max-bytes");
  if (maxBytes <= 0)
    throw new InputError(
      `--cache-max-bytes expects more than 0 bytes, got "${raw.cacheMaxBytes}" (to keep no cache, pass --no-cache)`,
    );
  const off = raw.cache === false;
  if (raw.cachePvc !== undefined) {
    if (raw.cacheDir !== undefined)
      throw new InputError("--cache-dir and --cache-pvc name two stores: give one of them");
    if (!DNS_LABEL.test(raw.cachePvc))
      throw new InputError(
        `--cache-pvc expects a PersistentVolumeClaim name (a DNS-1123 label such as ci-cache), got ${JSON.stringify(raw.cachePvc)}`,
      );
    return { off, store: { kind: "pvc", claim: raw.cachePvc }, maxBytes };
  }
  if (raw.cacheDir === "") throw new InputError("--cache-dir expects a directory, got an empty value");
  const dir = resolve(raw.cacheDir ?? defaultCacheDir(env));
  let isDirectory = true;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch {
    // Not there yet: the store makes it.
  }
  if (!isDirectory) throw new InputError(`--cache-dir: expected a directory, found a file at ${dir}`);
  return { off, store: { kind: "dir", dir }, maxBytes };
}

/**
 * The repository the caches belong to: `--repo` as given, else `local/<first 12 hex of sha256(absolute path)>` of
 * the checkout (or, when the workflow skips the checkout, of the workflow file): stable for one checkout on one host,
 * and never shared with another checkout's runs.
 */
export function resolveCacheRepo(
  repo: string | undefined,
  checkoutDir: string | undefined,
  workflowFile: string,
): { repo: string; from: CacheRepoSource } {
  if (repo !== undefined) return { repo, from: "--repo" };
  const path = checkoutDir ?? resolve(workflowFile);
  return {
    repo: `local/${createHash("sha256").update(path).digest("hex").slice(0, 12)}`,
    from: checkoutDir !== undefined ? "checkout" : "workflow",
  };
}

/** The executor's backend for these flags and this repository. */
export function buildCacheBackend(flags: CacheFlags, repo: string): CacheBackend {
  return flags.store.kind === "pvc"
    ? { kind: "pvc", repo, claim: flags.store.claim, maxBytes: flags.maxBytes }
    : { kind: "dir", repo, dir: flags.store.dir, maxBytes: flags.maxBytes };
}
