// `cache list|prune`: the host directory cache store's entries, and removing the unused or the least recently used.
import { readDuration } from "../../core/duration.js";
import { readSize } from "../../core/patterns.js";
import { describeError, InputError } from "../../core/errors.js";
import type { CommandIo, CommandSpec } from "../command-spec.js";
import { EXIT, exitCodeForError } from "../exit-codes.js";
import { checkCacheName, defaultCacheDir } from "../../cache/store-layout.js";
import { createDirStore } from "../../cache/dir-store.js";
import * as format from "../../cache/format-cache.js";

export interface RawCacheCommandOptions {
  cacheDir?: string;
  repo?: string;
  olderThan?: string;
  maxBytes?: string;
  json?: boolean;
}

export interface CacheCommand {
  readonly action: "list" | "prune";
  readonly dir: string;
  readonly repo?: string;
  readonly olderThanMs?: number;
  readonly maxBytes?: number;
  readonly json: boolean;
}

/** Validates the action and options; throws InputError. Touches nothing. */
export async function resolveCacheCommand(
  args: readonly string[],
  raw: RawCacheCommandOptions,
  env: NodeJS.ProcessEnv,
): Promise<CacheCommand> {
  const [action] = args;
  if (action !== "list" && action !== "prune")
    throw new InputError(`cache expects list or prune, got ${JSON.stringify(action ?? "")}`);
  if (action === "list") {
    for (const [flag, value] of [
      ["--older-than", raw.olderThan],
      ["--max-bytes", raw.maxBytes],
    ] as const) {
      if (value !== undefined) throw new InputError(`${flag} is an option of cache prune, not of cache list`);
    }
  }
  if (raw.repo !== undefined) {
    try {
      checkCacheName("repository", raw.repo);
    } catch (error) {
      throw new InputError(`--repo: ${describeError(error)}`);
    }
  }
  if (raw.cacheDir === "") throw new InputError("--cache-dir expects a directory, got an empty string");
  return {
    action,
    dir: raw.cacheDir ?? defaultCacheDir(env),
    ...(raw.repo === undefined ? {} : { repo: raw.repo }),
    ...(raw.olderThan === undefined ? {} : { olderThanMs: readDuration(raw.olderThan, "--older-than") }),
    ...(raw.maxBytes === undefined ? {} : { maxBytes: readSize(raw.maxBytes, "--max-bytes") }),
    json: raw.json ?? false,
  };
}

export const cacheCommand: CommandSpec<RawCacheCommandOptions> = {
  name: "cache",
  summary:
    "show the host's cache store (list), or remove entries unused for --older-than or over --max-bytes (prune); no cluster needed",
  arguments: "<list|prune>",
  options: [
    {
      flag: "--cache-dir <dir>",
      description:
        "the cache store's directory (default $XDG_CACHE_HOME/knotless-runner-k8s, else ~/.cache/knotless-runner-k8s)",
    },
    { flag: "--repo <name>", description: "only this repository's entries" },
    {
      flag: "--older-than <duration>",
      description: "prune: remove entries not restored or saved for longer than this, e.g. 72h",
    },
    {
      flag: "--max-bytes <size>",
      description: "prune: then remove the least recently used until the entries hold at most this, e.g. 10G",
    },
    { flag: "--json", description: "print JSON instead of lines" },
  ],
  execute: ({ args, options, ...io }) => executeCache(args, options, io),
};

/** Prints the listing or what prune removed on stdout; exit 0, 2 for bad input, 3 when the store cannot be read or changed. */
export async function executeCache(
  args: readonly string[],
  options: RawCacheCommandOptions,
  { env, stdout, stderr }: CommandIo,
): Promise<number> {
  try {
    const config = await resolveCacheCommand(args, options, env);
    const store = createDirStore({ dir: config.dir, maxBytes: Number.POSITIVE_INFINITY });
    if (config.action === "list") {
      const listing = await store.list(config.repo);
      stdout.write(
        config.json
          ? format.formatCacheListJson(listing, config.dir)
          : format.formatCacheList(listing, config.dir, Date.now()),
      );
    } else {
      const report = await store.prune({
        ...(config.repo === undefined ? {} : { repo: config.repo }),
        ...(config.olderThanMs === undefined ? {} : { olderThanMs: config.olderThanMs }),
        ...(config.maxBytes === undefined ? {} : { maxBytes: config.maxBytes }),
      });
      stdout.write(
        config.json ? format.formatPruneJson(report, config.dir) : format.formatPruneReport(report, config.dir, config),
      );
    }
    return EXIT.success;
  } catch (error) {
    stderr.write(`knotless-runner-k8s: cache: ${describeError(error)}\n`);
    return exitCodeForError(error);
  }
}
