// Which saved entry a cache restores: the exact key, else the newest entry whose key starts with the first fallback
// prefix that matches any. Pure; every store (the host directory, the PVC) decides with this one function.
import type { CacheEntry, CacheLookup, CacheSpec } from "../workflow/cache-types.js";

export function selectEntry(entries: readonly CacheEntry[], spec: Pick<CacheSpec, "key" | "restoreKeys">): CacheLookup {
  const exact = entries.find((entry) => entry.key === spec.key);
  if (exact) return { kind: "exact", entry: exact };
  for (const prefix of spec.restoreKeys) {
    const newest = entries
      .filter((entry) => entry.key.startsWith(prefix))
      .reduce<CacheEntry | undefined>(
        (best, entry) =>
          best === undefined ||
          entry.createdAt > best.createdAt ||
          (entry.createdAt === best.createdAt && entry.key > best.key)
            ? entry
            : best,
        undefined,
      );
    if (newest) return { kind: "fallback", entry: newest, prefix };
  }
  return { kind: "miss" };
}
