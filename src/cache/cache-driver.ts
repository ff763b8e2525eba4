// The one small interface a cache backend implements for the run: restore one cache into the pod, save one out of it.
import type { CacheSpec } from "../workflow/cache-types.js";

/** What a restore found and moved. `bytes`: as stored (compressed), moved into the pod or, for a backend in the pod, read there. */
export type CacheRestoreOutcome =
  | { readonly kind: "exact" | "fallback"; readonly restoredKey: string; readonly bytes: number }
  | { readonly kind: "miss" };

/** What a save did; "skipped" with why (no path existed in the pod). */
export type CacheSaveResult =
  | { readonly status: "saved" | "exists"; readonly bytes: number }
  | { readonly status: "skipped"; readonly reason: string };

/**
 * How one backend moves caches, behind the run's cache steps (src/cache/run-caches.ts), which time each call, report
 * it (events, result.json) and turn every failure into a warning. A backend whose store is on the host
 * (src/cache/host-cache-driver.ts: the directory store) streams archives through the executor's restoreCache and
 * saveCache; one whose bytes stay in the cluster (the PVC backend) runs its lookup, extraction and save in the pod and
 * implements the same two calls there. Both decide what to restore with selectEntry (src/cache/select-entry.ts).
 */
export interface CacheDriver {
  /** One line for the log: where the caches live (`host directory /var/cache/knotless`). */
  readonly description: string;
  /**
   * Restores the best entry for `spec` (the exact key, else the newest by the first matching fallback prefix) into
   * the pod, after copyIn and before the first step. Throws for a failure (store unreadable, entry corrupt, stream
   * cut); CancelledError when the run's signal is aborted.
   */
  restore(spec: CacheSpec): Promise<CacheRestoreOutcome>;
  /**
   * Saves `spec.paths` from the pod under `spec.key`, after a successful run whose restore was not an exact hit.
   * Never replaces a saved key ("exists"). Throws for a failure (the archive refused, the pod's tar failed, the store
   * could not be written); nothing is stored then. CancelledError when the run's signal is aborted.
   */
  save(spec: CacheSpec): Promise<CacheSaveResult>;
}
