// Removes one entry file without ever removing a different entry that took its name meanwhile.
import { link, rename, stat, unlink } from "node:fs/promises";
import { newTempPath } from "./store-layout.js";

/**
 * Moves the entry at `path` out of the way (rename into the temp directory: atomic, so readers and savers see it or
 * not), then deletes it. When `ino` is given and the file moved is another inode (the entry was removed and its key
 * saved again since it was listed), that one is linked back first. Returns false when nothing was at `path`. A reader
 * that had the file open keeps reading it.
 */
export async function removeEntryFile(root: string, path: string, ino?: number): Promise<boolean> {
  const moved = newTempPath(root);
  try {
    await rename(path, moved);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
  try {
    if (ino !== undefined && (await stat(moved)).ino !== ino) {
      await link(moved, path).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "EEXIST") throw error;
      });
      return false;
    }
    return true;
  } finally {
    await unlink(moved).catch(() => undefined);
  }
}
