// Makes a directory and its missing parents one level at a time: node 20's recursive mkdir loops forever under /proc.
import { mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/**
 * Like `mkdirSync(path, { recursive: true })`, but each missing level is made with a plain mkdir, so a path where
 * directories cannot be made (under /proc or /sys, say) fails at once with the error of the first level that could
 * not be made, instead of spinning: node 20's recursive mkdir retries ENOENT there forever. Throws that error (an
 * existing file in the way gives ENOTDIR or EEXIST).
 */
export function makeDirectorySync(path: string): void {
  const missing: string[] = [];
  for (let dir = resolve(path); ; dir = dirname(dir)) {
    try {
      if (statSync(dir).isDirectory()) break;
      throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${dir}'`), { code: "ENOTDIR" });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
    missing.push(dir);
    if (dirname(dir) === dir) break;
  }
  for (const dir of missing.reverse()) {
    try {
      mkdirSync(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST" || !statSync(dir).isDirectory()) throw error;
    }
  }
}
