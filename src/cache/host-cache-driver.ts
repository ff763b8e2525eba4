// The cache driver of a store on the runner's host (the directory store): archives stream through kubectl exec.
import { describeError } from "../core/errors.js";
import { CacheTransferError, type CacheArchiveGate } from "../executor/cache-archive.js";
import type { Executor } from "../executor/executor.js";
import type { CacheDriver, CacheRestoreOutcome, CacheSaveResult } from "./cache-driver.js";
import {
  CacheDecoderMissingError,
  type CacheCompression,
  type CacheEntry,
  type CacheSpec,
  type CacheStore,
} from "../workflow/cache-types.js";

export interface HostCacheDriverOptions {
  readonly store: CacheStore;
  /** The repository the entries belong to (`--repo`): lookups and saves never see another's. */
  readonly repo: string;
  readonly executor: Pick<Executor, "restoreCache" | "saveCache">;
  /**
   * A fresh hostile-archive gate per restore, confined to the cache's paths (src/cache/archive-gate.ts), for an entry
   * of `compression`; with `output: "tar"` it sends what the entry decodes to. Required: the gate is the one place
   * archives are judged (saves are not checked).
   */
  readonly createGate: (spec: CacheSpec, compression: CacheCompression, output: "archive" | "tar") => CacheArchiveGate;
  readonly description: string;
  /** Told, in one line for the log, when an entry goes into the pod decoded on this host (the pod lacked its decompressor). */
  readonly inform?: (message: string) => void;
}

export function createHostCacheDriver(options: HostCacheDriverOptions): CacheDriver {
  const { store, repo, executor, createGate } = options;
  /**
   * Sends the entry as stored; when the pod says it has no decompressor for it (a zstd entry, an image without zstd),
   * sends it again decompressed on this host, through the same gate, as a plain tar.
   */
  const sendEntry = async (spec: CacheSpec, entry: CacheEntry): Promise<{ readonly bytes: number }> => {
    try {
      return await executor.restoreCache(
        spec,
        { stream: store.openRead(entry), compression: entry.compression },
        createGate(spec, entry.compression, "archive"),
      );
    } catch (error) {
      if (!(error instanceof CacheDecoderMissingError) || entry.compression === "none") throw error;
      options.inform?.(
        `cache ${spec.key}: the image has no ${entry.compression}; the entry ${entry.key} is decoded on this host and sent as a plain tar (more bytes through the API server)`,
      );
      return executor.restoreCache(
        spec,
        { stream: store.openRead(entry), compression: "none" },
        createGate(spec, entry.compression, "tar"),
      );
    }
  };
  /**
   * An entry the gate refused for its own key goes, as a corrupt one does: the key is immutable, so kept it would
   * fail every later restore and no run could save the key again. Saves are not checked (the gate is where archives
   * are judged). An entry restored by a fallback prefix stays: it may be refused only because it is another cache's
   * (other paths, under a key this cache's prefix happens to match), and its own key's restores judge it.
   */
  const restoreEntry = async (
    spec: CacheSpec,
    entry: CacheEntry,
    exact: boolean,
  ): Promise<{ readonly bytes: number }> => {
    try {
      return await sendEntry(spec, entry);
    } catch (error) {
      if (!(error instanceof CacheTransferError) || error.entryFault !== "refused") throw error;
      if (!exact)
        throw new CacheTransferError(
          `${error.message}; the entry, ${entry.key}'s, was kept (restored here by a fallback prefix)`,
          "refused",
          { cause: error },
        );
      const removed = await store.remove(entry).then(
        (gone) => (gone ? "; the entry was removed from the store" : ""),
        (failure: unknown) => `; removing the entry failed: ${describeError(failure)}`,
      );
      throw new CacheTransferError(`${error.message}${removed}`, "refused", { cause: error });
    }
  };
  return {
    description: options.description,
    async restore(spec: CacheSpec): Promise<CacheRestoreOutcome> {
      const found = await store.lookup(repo, spec);
      if (found.kind === "miss") return { kind: "miss" };
      // Checked again on the way in: the store's bytes are an earlier run's untrusted code's, whatever wrote them.
      const moved = await restoreEntry(spec, found.entry, found.kind === "exact");
      return { kind: found.kind, restoredKey: found.entry.key, bytes: moved.bytes };
    },
    async save(spec: CacheSpec): Promise<CacheSaveResult> {
      const writer = await store.beginSave(repo, spec.key, "gzip");
      if (writer === "exists") return { status: "exists", bytes: 0 };
      const saved = await executor.saveCache(spec, writer);
      if (saved.status === "nothing")
        return { status: "skipped", reason: `none of its paths exists in the pod (${spec.paths.join(", ")})` };
      return { status: saved.status, bytes: saved.bytes };
    },
  };
}
