// The default cache store: a directory on the runner host, shared safely by many runs and runner processes at once.
//
// Guarantees (layout in store-layout.ts, file format in entry-file.ts):
// - A save streams into v1/tmp/<random>.part and is made visible by link(2) to v1/repos/<sha256(repo)>/<sha256(key)>.entry:
//   complete or absent, never half there; the second save of a key, in this process or another, gets EEXIST from the
//   kernel and says "exists". Keys are immutable: nothing ever rewrites an entry file, only removes it.
// - Reads check the sha256 while streaming; a damaged entry is removed (by inode: never a successor of its key) and
//   reported; so is one the restore's gate refused (remove: matched by sha256 and inode). A successful read sets the
//   file's mtime, which is the entry's lastUsedAt.
// - After each save the store is brought back under maxBytes (archive bytes of all repositories together), least
//   recently used first, never the entry just saved; an archive larger than maxBytes is not kept at all. Several
//   processes evicting at once may remove a little more than needed, never a sound entry they did not list.
// - Temp files older than STALE_TEMP_MS (a killed runner's) are removed after saves and by prune.
// Nothing is held in memory: archives stream both ways; listing reads each entry's trailer only.
import type { Readable } from "node:stream";
import { unlink } from "node:fs/promises";
import type {
  CacheCompression,
  CacheEntry,
  CacheLookup,
  CacheSpec,
  CacheStore,
  CacheWriter,
} from "../workflow/cache-types.js";
import { openEntryRead } from "./entry-reader.js";
import { startEntrySave } from "./entry-writer.js";
import { listStoredEntries, listTempFiles, readEntryOf } from "./list-entries.js";
import type { DamagedFile, StoredEntry } from "./list-entries.js";
import { removeEntryFile } from "./remove-entry.js";
import { selectEntry } from "./select-entry.js";
import { ensureStoreLayout } from "./store-dirs.js";
import { checkCacheName } from "./store-layout.js";

/** A temp file untouched this long belongs to no live save (a save writes to it as its bytes arrive). */
export const STALE_TEMP_MS = 3_600_000;

export interface DirStoreOptions {
  readonly dir: string;
  /** Archive bytes the store keeps, all repositories together (`--cache-max-bytes`); Infinity: no bound. */
  readonly maxBytes: number;
  /** Epoch ms of entries' creation and use; tests pass a clock of their own. Temp files' age is the real clock's. */
  readonly now?: () => number;
  /** Told of each damaged entry removed and each entry evicted, as it happens (the run log's warnings). */
  readonly onEvent?: (event: DirStoreEvent) => void;
}

export type DirStoreEvent =
  | { readonly kind: "damaged"; readonly path: string; readonly reason: string }
  | { readonly kind: "evicted"; readonly entry: CacheEntry };

/** What prune removed, in order, with why. */
export type PruneRemoval =
  | { readonly kind: "unused"; readonly entry: CacheEntry; readonly idleMs: number }
  | { readonly kind: "over-size"; readonly entry: CacheEntry }
  | { readonly kind: "damaged"; readonly path: string; readonly reason: string }
  | { readonly kind: "temp"; readonly path: string; readonly bytes: number; readonly ageMs: number };

export interface PruneOptions {
  /** Only this repository's entries (temp files are the whole store's). */
  readonly repo?: string;
  /** Remove entries not used (restored or saved) for longer than this. */
  readonly olderThanMs?: number;
  /** Then remove the least recently used until the entries considered hold at most this many archive bytes. */
  readonly maxBytes?: number;
}

export interface PruneReport {
  readonly removed: readonly PruneRemoval[];
  readonly kept: readonly CacheEntry[];
}

export interface StoreListing {
  /** Least recently used first. */
  readonly entries: readonly CacheEntry[];
  /** Files that are not sound entries; listing leaves them (prune, or the next lookup that meets them, removes them). */
  readonly damaged: readonly { readonly path: string; readonly reason: string }[];
}

export interface DirStore extends CacheStore {
  readonly dir: string;
  list(repo?: string): Promise<StoreListing>;
  prune(options: PruneOptions): Promise<PruneReport>;
}

/** Opens (lazily: the directories are made by the first save) the store in `options.dir`. */
export function createDirStore(options: DirStoreOptions): DirStore {
  const root = options.dir;
  const now = options.now ?? Date.now;
  const emit = options.onEvent ?? (() => undefined);
  if (!(options.maxBytes >= 0))
    throw new TypeError(`maxBytes must be a non-negative number, got ${String(options.maxBytes)}`);

  const removeDamaged = async (file: DamagedFile): Promise<boolean> => {
    const removed = await removeEntryFile(root, file.path, file.ino);
    if (removed) emit({ kind: "damaged", path: file.path, reason: file.reason });
    return removed;
  };

  const removeStaleTemps = async (): Promise<PruneRemoval[]> => {
    const removed: PruneRemoval[] = [];
    for (const temp of await listTempFiles(root)) {
      // The kernel sets a temp file's mtime as its bytes arrive, so its age is judged by the real clock, not `now`.
      const ageMs = Date.now() - temp.modifiedAt;
      if (ageMs <= STALE_TEMP_MS) continue;
      try {
        await unlink(temp.path);
        removed.push({ kind: "temp", path: temp.path, bytes: temp.bytes, ageMs });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      }
    }
    return removed;
  };

  /** Removes the least recently used of `entries` (never `keep`) until they hold at most `limit` bytes. */
  const evictDownTo = async (
    entries: readonly StoredEntry[],
    limit: number,
    keep?: string,
  ): Promise<{ evicted: StoredEntry[]; kept: StoredEntry[] }> => {
    let total = entries.reduce((sum, entry) => sum + entry.bytes, 0);
    const evicted: StoredEntry[] = [];
    const kept: StoredEntry[] = [];
    for (const entry of [...entries].sort(byLeastRecentlyUsed)) {
      if (total > limit && entry.path !== keep && (await removeEntryFile(root, entry.path, entry.ino))) {
        total -= entry.bytes;
        evicted.push(entry);
      } else {
        kept.push(entry);
      }
    }
    return { evicted, kept };
  };

  const afterSave = async (path: string): Promise<void> => {
    await removeStaleTemps().catch(() => undefined);
    if (options.maxBytes === Number.POSITIVE_INFINITY) return;
    const listing = await listStoredEntries(root);
    const { evicted } = await evictDownTo(listing.entries, options.maxBytes, path);
    for (const entry of evicted) emit({ kind: "evicted", entry: toCacheEntry(entry) });
  };

  return {
    dir: root,

    async lookup(repo: string, spec: Pick<CacheSpec, "key" | "restoreKeys">): Promise<CacheLookup> {
      checkCacheName("repository", repo);
      checkCacheName("key", spec.key);
      for (const prefix of spec.restoreKeys) checkRestoreKey(prefix);
      const exact = await readEntryOf(root, repo, spec.key);
      if (exact !== undefined && !("reason" in exact)) return { kind: "exact", entry: toCacheEntry(exact) };
      if (exact !== undefined) await removeDamaged(exact);
      if (spec.restoreKeys.length === 0) return { kind: "miss" };
      const listing = await listStoredEntries(root, repo);
      for (const damaged of listing.damaged) await removeDamaged(damaged);
      return selectEntry(listing.entries.map(toCacheEntry), spec);
    },

    openRead(entry: CacheEntry): Readable {
      return openEntryRead({
        root,
        entry,
        now,
        removeDamaged: (path, ino, reason) => removeDamaged({ path, ino, reason }).then(() => undefined),
      });
    },

    async beginSave(repo: string, key: string, compression: CacheCompression): Promise<CacheWriter | "exists"> {
      checkCacheName("repository", repo);
      checkCacheName("key", key);
      // A hint only, to spare the upload: the link at commit is what decides.
      const existing = await readEntryOf(root, repo, key);
      if (existing !== undefined && !("reason" in existing)) return "exists";
      if (existing !== undefined) await removeDamaged(existing);
      ensureStoreLayout(root);
      return startEntrySave({ root, repo, key, compression, maxBytes: options.maxBytes, now, afterSave });
    },

    async remove(entry: CacheEntry): Promise<boolean> {
      checkCacheName("repository", entry.repo);
      checkCacheName("key", entry.key);
      const stored = await readEntryOf(root, entry.repo, entry.key);
      if (stored === undefined) return false;
      if ("reason" in stored) return removeDamaged(stored);
      if (stored.sha256 !== entry.sha256 || stored.createdAt !== entry.createdAt) return false;
      return removeEntryFile(root, stored.path, stored.ino);
    },

    async list(repo?: string): Promise<StoreListing> {
      if (repo !== undefined) checkCacheName("repository", repo);
      const listing = await listStoredEntries(root, repo);
      return {
        entries: listing.entries.sort(byLeastRecentlyUsed).map(toCacheEntry),
        damaged: listing.damaged.map(({ path, reason }) => ({ path, reason })),
      };
    },

    async prune(prune: PruneOptions): Promise<PruneReport> {
      if (prune.repo !== undefined) checkCacheName("repository", prune.repo);
      const removed: PruneRemoval[] = await removeStaleTemps();
      const listing = await listStoredEntries(root, prune.repo);
      for (const damaged of listing.damaged) {
        if (await removeDamaged(damaged)) removed.push({ kind: "damaged", path: damaged.path, reason: damaged.reason });
      }
      let live = listing.entries.sort(byLeastRecentlyUsed);
      if (prune.olderThanMs !== undefined) {
        const stillUsed: StoredEntry[] = [];
        for (const entry of live) {
          const idleMs = now() - entry.lastUsedAt;
          if (idleMs > prune.olderThanMs && (await removeEntryFile(root, entry.path, entry.ino)))
            removed.push({ kind: "unused", entry: toCacheEntry(entry), idleMs });
          else stillUsed.push(entry);
        }
        live = stillUsed;
      }
      if (prune.maxBytes !== undefined) {
        const { evicted, kept } = await evictDownTo(live, prune.maxBytes);
        for (const entry of evicted) removed.push({ kind: "over-size", entry: toCacheEntry(entry) });
        live = kept;
      }
      return { removed, kept: live.map(toCacheEntry) };
    },
  };
}

/** A restore key is a prefix: "" matches every entry of the repository; one with NUL or over 512 characters is refused. */
function checkRestoreKey(prefix: string): void {
  if (prefix !== "") checkCacheName("restore key", prefix);
}

/** Least recently used first; among equals the older, then by repository and key (a stable order for listing). */
function byLeastRecentlyUsed(a: CacheEntry, b: CacheEntry): number {
  return (
    a.lastUsedAt - b.lastUsedAt || a.createdAt - b.createdAt || compareText(a.repo, b.repo) || compareText(a.key, b.key)
  );
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function toCacheEntry(entry: StoredEntry): CacheEntry {
  return {
    repo: entry.repo,
    key: entry.key,
    bytes: entry.bytes,
    sha256: entry.sha256,
    compression: entry.compression,
    createdAt: entry.createdAt,
    lastUsedAt: entry.lastUsedAt,
  };
}
