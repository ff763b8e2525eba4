// Makes the store's directories (mode 0700: entries can hold whatever the steps left, tokens included).
import { mkdirSync, statSync } from "node:fs";
import { makeDirectorySync } from "../core/make-directory.js";
import { reposDir, tempDir } from "./store-layout.js";

/** Makes `dir` (its parent must exist) unless it is there; another process making it first is fine. */
export function ensureStoreDir(dir: string): void {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST" || !statSync(dir).isDirectory()) throw error;
  }
}

/** Makes the store's root (and its parents), v1/, v1/repos/ and v1/tmp/. */
export function ensureStoreLayout(root: string): void {
  makeDirectorySync(root);
  ensureStoreDir(`${root}/v1`);
  ensureStoreDir(reposDir(root));
  ensureStoreDir(tempDir(root));
}
