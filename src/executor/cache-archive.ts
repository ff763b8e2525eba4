// The executor contract's cache archives: what restoreCache takes and saveCache answers, and how a cache's move fails.
import type { Duplex, Readable } from "node:stream";
import type { CacheCompression } from "../workflow/cache-types.js";

/**
 * A cache's move failed: a warning for the run, never its verdict. `entryFault` says when the stored entry itself is
 * to blame, so that it goes: "corrupt", its bytes were not what the store saved (the store removed it already);
 * "refused", the gate found it hostile or broken (cache/host-cache-driver.ts removes it, so that its immutable key
 * can be saved again, soundly, by the next run).
 */
export class CacheTransferError extends Error {
  override readonly name = "CacheTransferError";
  constructor(
    message: string,
    readonly entryFault?: "corrupt" | "refused",
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * The hostile-archive check a restored archive passes through on its way into the pod (cache/archive-gate.ts'
 * createArchiveGate, with the cache's paths as its roots): a Transform that lets a chunk through only once the tar
 * headers it completes were checked.
 */
export interface CacheArchiveGate {
  readonly stream: Duplex;
  /** Resolves once the archive ended complete and allowed; rejects with why it is refused. */
  readonly done: Promise<unknown>;
}

/** A stored archive on its way into the pod. */
export interface CacheArchive {
  readonly stream: Readable;
  /** How the bytes reaching the pod are compressed (after the gate: "none" when the gate decodes them). */
  readonly compression: CacheCompression;
}

/** What a save did: the entry stored (or another run's already there), or nothing to store (no path existed). */
export type CacheSaveOutcome =
  | { readonly status: "saved" | "exists"; readonly bytes: number; readonly missing: readonly string[] }
  | { readonly status: "nothing"; readonly missing: readonly string[] };
