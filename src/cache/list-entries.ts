// Reads the entries of the host directory store from their trailers: one repository's, or every one's.
import { readdir, open, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { CacheEntry } from "../workflow/cache-types.js";
import { DamagedEntryError, readTrailer } from "./entry-file.js";
import { ENTRY_SUFFIX, TEMP_SUFFIX, entryPath, hashName, repoDir, reposDir, tempDir } from "./store-layout.js";

/** An entry as listed, with the file it lives in (its inode, so that removing it never removes a successor). */
export interface StoredEntry extends CacheEntry {
  readonly path: string;
  readonly ino: number;
}

/** A file under v1/repos/ that is not a sound entry: truncated, changed, or misplaced. */
export interface DamagedFile {
  readonly path: string;
  readonly ino: number;
  readonly reason: string;
}

export interface EntryListing {
  readonly entries: StoredEntry[];
  readonly damaged: DamagedFile[];
}

/** A temp file: a save in progress, or one left by a killed process. */
export interface TempFile {
  readonly path: string;
  readonly bytes: number;
  readonly modifiedAt: number;
}

/** Every entry of `repo`, or of every repository when it is undefined; a missing store lists nothing. */
export async function listStoredEntries(root: string, repo?: string): Promise<EntryListing> {
  const dirs =
    repo === undefined
      ? (await readNames(reposDir(root))).map((name) => join(reposDir(root), name))
      : [repoDir(root, repo)];
  const listing: EntryListing = { entries: [], damaged: [] };
  for (const dir of dirs) {
    for (const name of await readNames(dir)) {
      if (!name.endsWith(ENTRY_SUFFIX)) continue;
      const read = await readStoredEntry(join(dir, name));
      if (read === undefined) continue;
      if ("reason" in read) listing.damaged.push(read);
      else listing.entries.push(read);
    }
  }
  return listing;
}

/** The entry of `key` in `repo`, damaged, or undefined when there is none. */
export function readEntryOf(root: string, repo: string, key: string): Promise<StoredEntry | DamagedFile | undefined> {
  return readStoredEntry(entryPath(root, repo, key));
}

/** The entry in the file at `path`, what is wrong with it, or undefined when the file is gone. */
export async function readStoredEntry(path: string): Promise<StoredEntry | DamagedFile | undefined> {
  let handle;
  try {
    handle = await open(path, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    const info = await handle.stat();
    try {
      const metadata = await readTrailer(handle, info.size);
      // The name is the key's hash and the directory the repository's: a trailer naming others is not this file's.
      if (
        basename(path) !== `${hashName(metadata.key)}${ENTRY_SUFFIX}` ||
        basename(dirname(path)) !== hashName(metadata.repo)
      ) {
        return { path, ino: info.ino, reason: "its trailer names another repository or key than its file name" };
      }
      return { ...metadata, lastUsedAt: info.mtimeMs, path, ino: info.ino };
    } catch (error) {
      if (error instanceof DamagedEntryError) return { path, ino: info.ino, reason: error.message };
      throw error;
    }
  } finally {
    await handle.close();
  }
}

/** The files in v1/tmp/, with their sizes and mtimes. */
export async function listTempFiles(root: string): Promise<TempFile[]> {
  const files: TempFile[] = [];
  for (const name of await readNames(tempDir(root))) {
    if (!name.endsWith(TEMP_SUFFIX)) continue;
    const path = join(tempDir(root), name);
    try {
      const info = await stat(path);
      files.push({ path, bytes: info.size, modifiedAt: info.mtimeMs });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
  return files;
}

async function readNames(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}
