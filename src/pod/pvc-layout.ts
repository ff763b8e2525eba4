// Where the PVC cache backend keeps entries on the claim: one directory per repository (all a run's pod mounts), two files per key.
import { createHash } from "node:crypto";

/** Where the Job's pod mounts the cache claim (`--cache-pvc NAME`). */
export const PVC_CACHE_MOUNT_PATH = "/knotless-cache";

/** The pod volume that carries the claim. */
export const PVC_CACHE_VOLUME = "cache";

/**
 * The claim's layout, each name the sha256 (hex) of the UTF-8 text it stands for, so any repository and key is a
 * safe file name:
 *
 *   /knotless-cache/<sha256(repo)>/<sha256(key)>.tar.gz   the archive (tar, zstd or gzip as the metadata's compression
 *                                                          says; the name predates zstd), created once, never rewritten
 *   /knotless-cache/<sha256(repo)>/<sha256(key)>.meta     its metadata; its presence makes the entry visible, its
 *                                                          mtime is the entry's last use (LRU)
 *   /knotless-cache/<sha256(repo)>/.tmp-*, .restore-*     a save or restore in progress (swept after an hour)
 *
 * A metadata file is lines of `name value`, the key last so it may hold any character but a line break:
 *
 *   knotless-cache-entry 1
 *   repo did:plc:xyz/knot
 *   bytes 1234
 *   sha256 <64 hex>
 *   compression zstd                                        (or gzip: the image had no zstd)
 *   createdAt 1767312000000
 *   key deps-3f2a…
 */
export const PVC_META_VERSION_LINE = "knotless-cache-entry 1";

/** sha256 of the UTF-8 text, hex: the directory of a repository, the file stem of a key. */
export function hashCacheName(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** The directory of one repository's entries in the pod. */
export function formatRepoDir(repo: string): string {
  return `${PVC_CACHE_MOUNT_PATH}/${hashCacheName(repo)}`;
}

/**
 * The run container's mount of the claim: only the repository's directory (`subPath`, which the kubelet creates when
 * it is missing), at the path it has in the layout above, so the in-pod scripts address it as before and the pod sees
 * no other repository's directory. The repository is never empty (the scripts refuse an empty one; the CLI derives
 * one from the checkout when --repo is not given).
 */
export function formatRepoMount(repo: string): { readonly mountPath: string; readonly subPath: string } {
  if (repo.length === 0) throw new RangeError("the cache repository is empty");
  return { mountPath: formatRepoDir(repo), subPath: hashCacheName(repo) };
}
