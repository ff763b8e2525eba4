// The PVC cache backend's restore and save of one cache, as sequences of in-pod commands over an injected exec; never throws.
import { describeError } from "../errors.js";
import type { CacheReport, CacheSpec } from "./cache-types.js";
import { parsePvcEvict, parsePvcList, parsePvcRestore, parsePvcSave, type PvcCommandOutput } from "./pvc-output.js";
import { buildPvcEvictCommand, buildPvcListCommand, buildPvcRestoreCommand, buildPvcSaveCommand } from "./pvc-scripts.js";
import { selectEntry } from "./select-entry.js";

/** Runs one argv in the run pod (no stdin) and gives back how it ended: the executor's exec, or a test's sandbox. */
export type PodExec = (argv: readonly string[]) => Promise<PvcCommandOutput>;

export interface PvcCacheOptions {
  /** The repository entries are keyed by (settings.cacheBackend.repo). */
  readonly repo: string;
  /** The claim's byte budget (settings.cacheBackend.maxBytes): a save evicts down to it. */
  readonly maxBytes: number;
  /** Makes temporary names unique across pods: the run id made safe ([A-Za-z0-9_-], at most 64). */
  readonly nonce: string;
  /** Epoch ms; the entry's creation time and the reports' durations. */
  readonly now: () => number;
}

/** A run id as a nonce: every other character becomes `-`, at most 64 characters, never empty. */
export function formatPvcNonce(runId: string): string {
  return runId.replace(/[^A-Za-z0-9_-]/g, "-").slice(0, 64) || "run";
}

/**
 * Lists the repository's entries, picks one with selectEntry, and restores it in the pod (checksum first). A miss,
 * an entry evicted between the list and the restore, and a corrupt entry (which the pod removes) never fail the run:
 * they are a miss or a `failed` restore with the reason.
 */
export async function restorePvcCache(exec: PodExec, spec: CacheSpec, options: PvcCacheOptions): Promise<CacheReport["restore"]> {
  const started = options.now();
  const ms = (): number => options.now() - started;
  try {
    const lookup = selectEntry(parsePvcList(await exec(buildPvcListCommand(options.repo)), options.repo), spec);
    if (lookup.kind === "miss") return { status: "miss", bytes: 0, ms: ms() };
    const outcome = parsePvcRestore(await exec(buildPvcRestoreCommand(options.repo, lookup.entry.key, options.nonce)));
    switch (outcome.kind) {
      case "restored":
        return { status: lookup.kind, restoredKey: lookup.entry.key, bytes: outcome.bytes, ms: ms() };
      case "missing":
        return { status: "miss", bytes: 0, ms: ms(), reason: `the entry of ${lookup.entry.key} was evicted before it could be restored` };
      case "corrupt":
        return { status: "failed", restoredKey: lookup.entry.key, bytes: 0, ms: ms(), reason: `corrupt entry, removed: ${outcome.reason}` };
      case "failed":
        return { status: "failed", restoredKey: lookup.entry.key, bytes: 0, ms: ms(), reason: outcome.reason };
    }
  } catch (error) {
    return { status: "failed", bytes: 0, ms: ms(), reason: describeError(error) };
  }
}

/**
 * Saves the cache's paths under its key unless the key exists, then evicts the claim down to its budget. The caller
 * decides whether to save at all (not after an exact hit, not after a failed run).
 */
export async function savePvcCache(exec: PodExec, spec: CacheSpec, options: PvcCacheOptions): Promise<CacheReport["save"]> {
  const started = options.now();
  const ms = (): number => options.now() - started;
  try {
    const argv = buildPvcSaveCommand({ repo: options.repo, key: spec.key, paths: spec.paths, maxBytes: options.maxBytes, createdAt: started, nonce: options.nonce });
    const outcome = parsePvcSave(await exec(argv));
    switch (outcome.kind) {
      case "exists":
        return { status: "exists", bytes: 0, ms: ms() };
      case "empty":
        return { status: "skipped", bytes: 0, ms: ms(), reason: "none of the cache's paths exists in the pod" };
      case "too-large":
        return { status: "failed", bytes: outcome.bytes, ms: ms(), reason: `the archive (${outcome.bytes} bytes) is larger than the cache budget (${outcome.maxBytes} bytes)` };
      case "failed":
        return { status: "failed", bytes: 0, ms: ms(), reason: outcome.reason };
      case "saved":
        break;
    }
    // The entry is saved either way; an eviction that failed is said (a warning), and the next save tries again.
    let evictionFailure: string | undefined;
    try {
      parsePvcEvict(await exec(buildPvcEvictCommand(options.maxBytes, options.nonce)));
    } catch (error) {
      evictionFailure = `saved, but the eviction failed: ${describeError(error)}`;
    }
    return { status: "saved", bytes: outcome.bytes, ms: ms(), ...(evictionFailure ? { reason: evictionFailure } : {}) };
  } catch (error) {
    return { status: "failed", bytes: 0, ms: ms(), reason: describeError(error) };
  }
}
