// The contract between the workflow's `caches:` (what to keep), the stores (where it is kept) and the executor (how it
// moves in and out of the pod). Types only: each side is built and tested on its own against these.
import type { Readable, Writable } from "node:stream";

/** One `caches:` entry of a workflow, with its templates rendered for this run (src/workflow/render-key.ts). */
export interface CacheSpec {
  /** The exact key, rendered: `deps-3f2a…`. Keys are immutable once saved. */
  readonly key: string;
  /** Fallback prefixes, rendered, tried in order after the exact key: the newest entry starting with one wins. */
  readonly restoreKeys: readonly string[];
  /** Absolute paths in the pod (a relative path in the file is resolved against /work), in the file's order. */
  readonly paths: readonly string[];
}

/** How a cache's bytes are compressed in the store: as the host found them (the first bytes), whatever the pod said. */
export type CacheCompression = "gzip" | "zstd" | "none";

/** One saved entry, as a store lists it. */
export interface CacheEntry {
  /** The repository the entry belongs to (`--repo`): one repository's runs never read another's entries. */
  readonly repo: string;
  readonly key: string;
  /** Bytes of the stored (compressed) archive. */
  readonly bytes: number;
  /** sha256 of the stored archive, hex; a read that does not end with it is a corrupt entry. */
  readonly sha256: string;
  readonly compression: CacheCompression;
  /** Epoch ms. */
  readonly createdAt: number;
  /** Epoch ms of the last restore (else the creation): least recently used goes first. */
  readonly lastUsedAt: number;
}

/** What a lookup found: the exact key, an entry by a fallback prefix, or nothing. */
export type CacheLookup =
  | { readonly kind: "exact"; readonly entry: CacheEntry }
  | { readonly kind: "fallback"; readonly entry: CacheEntry; readonly prefix: string }
  | { readonly kind: "miss" };

/** A save in progress: write the archive into `stream`, then commit (or abort). */
export interface CacheWriter {
  readonly stream: Writable;
  /**
   * Makes the entry visible under its key, atomically. "exists": another run (or runner process) saved the same key
   * first; this one's bytes are discarded and the store is unchanged. `compression`: what the bytes turned out to be
   * (the save tells it from their first bytes, after they were written); the entry records it, else the compression
   * beginSave was given.
   */
  commit(compression?: CacheCompression): Promise<"saved" | "exists">;
  /** Discards what was written; safe after a failed write and when called twice. */
  abort(): Promise<void>;
}

/**
 * Where entries live. The host directory store (src/cache/dir-store.ts) is the default; the PVC backend keeps them
 * in the cluster instead and implements the same semantics in the pod. No method throws for a missing entry.
 */
export interface CacheStore {
  lookup(repo: string, spec: Pick<CacheSpec, "key" | "restoreKeys">): Promise<CacheLookup>;
  /**
   * Streams an entry's archive. The stream errors with CacheCorruptError when its bytes do not end with the
   * entry's sha256 (the entry is then removed); a successful read marks the entry used (LRU).
   */
  openRead(entry: CacheEntry): Readable;
  /**
   * Starts a save, or says at once that the key already exists. `compression` is what the caller expects to write;
   * commit may name what was actually written, and that is what the entry records.
   */
  beginSave(repo: string, key: string, compression: CacheCompression): Promise<CacheWriter | "exists">;
  /**
   * Removes `entry`, as it was looked up: one whose bytes held their checksum but were refused on their way into the
   * pod (a hostile member, broken tar or compression). Never removes a different entry saved under its key since.
   * False when it was no longer there.
   */
  remove(entry: CacheEntry): Promise<boolean>;
}

/**
 * The pod has no program to decompress the entry with (a zstd entry restored into an image without zstd, say): it
 * said so at once and read none of it. The host may decompress the entry itself and send the plain tar instead.
 */
export class CacheDecoderMissingError extends Error {
  override readonly name = "CacheDecoderMissingError";
  constructor(readonly compression: CacheCompression) {
    super(`the pod has no ${compression} to decompress the entry with`);
  }
}

/** A stored entry whose bytes are not what was saved (truncated, changed): skipped, reported, removed. */
export class CacheCorruptError extends Error {
  override readonly name = "CacheCorruptError";
}

/** What happened to one cache in one run, for the log and result.json (`caches` in the lexicon). */
export interface CacheReport {
  readonly key: string;
  readonly restore: {
    readonly status: "exact" | "fallback" | "miss" | "failed";
    /** The key restored: the exact key or the fallback entry's. */
    readonly restoredKey?: string;
    readonly bytes: number;
    readonly ms: number;
    /** Why it failed (a warning, never a failed run). */
    readonly reason?: string;
  };
  readonly save: {
    /** "skipped": an exact hit, or the run did not succeed; "exists": another run saved the key first. */
    readonly status: "saved" | "exists" | "skipped" | "failed";
    readonly bytes: number;
    readonly ms: number;
    readonly reason?: string;
  };
}
