// Writes validated output entries under one destination directory, never following a symlink.
import { createHash, hash as cryptoHash } from "node:crypto";
import type { Hash } from "node:crypto";
import {
  chmodSync,
  closeSync,
  constants as fsConstants,
  readFileSync,
  fchmodSync,
  futimesSync,
  lstatSync,
  mkdirSync,
  openSync,
  symlinkSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import type { Stats } from "node:fs";

/** A file fully written: by writeSmallOutputFile, or streamed and closed by closeOutputFile. */
export interface WrittenFile {
  readonly path: string;
  readonly size: number;
  readonly sha256: string;
}

/**
 * The destination and the directories this extraction created or verified (lstat: a real directory, not a
 * symlink) inside it, as paths relative to root. The cache is sound because an entry never removes or
 * replaces a directory: only regular files are unlinked (openExclusive), and a directory or symlink entry
 * is written only where nothing exists yet. A path in knownDirs therefore stays a real directory for the
 * rest of the extraction, and a later symlink entry at that path is refused rather than invalidating it.
 * Whoever adds a code path that removes or renames anything but a regular file must delete that path and
 * every path below it from knownDirs.
 */
export interface OutputTree {
  readonly root: string;
  readonly knownDirs: Set<string>;
  /** The process umask when the tree was made, or undefined where it cannot be read (then every file is chmod-ed). */
  readonly umask: number | undefined;
}

// O_EXCL after unlinking any old file: never write through a pre-existing hard link or symlink.
const CREATE_FLAGS = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW;

/** Creates the tree state for `root`, an existing directory given as its real path. */
export function createOutputTree(root: string): OutputTree {
  return { root, knownDirs: new Set(), umask: readUmask() };
}

/** The umask from /proc/self/status (Linux 4.7+), without process.umask()'s write-and-restore. */
function readUmask(): number | undefined {
  try {
    const match = /^Umask:\s*([0-7]+)$/m.exec(readFileSync("/proc/self/status", "latin1"));
    return match?.[1] === undefined ? undefined : parseInt(match[1], 8);
  } catch {
    return undefined;
  }
}

/** The mode a written file gets: permission bits at most 0o755 (exec kept), owner can read and write. */
export function toFileMode(mode: number): number {
  return (mode & 0o755) | 0o600;
}

/** The mode a written directory gets: at most 0o755, owner can always enter and write. */
export function toDirectoryMode(mode: number): number {
  return (mode & 0o755) | 0o700;
}

/**
 * Files of at most SMALL_FILE_BYTES (the bulk of an output tree) are written once their whole body is in
 * memory: open (with the final mode), one write, futimes, close. Larger bodies are written piece by piece as
 * they arrive. Every call is synchronous: async fs calls (each a thread-pool round trip and an event-loop
 * wake-up) cost more than the writes themselves, on the page cache, and the caller keeps no piece after the
 * call returns, so the input buffers can be reused at once. One small file, or one piece of a large one, holds
 * the event loop for well under a millisecond on the page cache; extractOutputs yields every few milliseconds.
 * (A disk that throttles writers holds it longer, as it holds tar.)
 */
export const SMALL_FILE_BYTES = 256 * 1024;

/**
 * Writes a new file at `parts` holding `body` (not kept: it may be a scratch buffer), with mode
 * toFileMode(mode) and mtime `mtime` (seconds since the epoch, negative before 1970). Returns a refusal reason when a parent is a symlink or not a directory, or when something
 * other than a regular file sits at the path (an old regular file is replaced). Throws for host file
 * system failures (ENAMETOOLONG included); a half-written file is removed.
 */
export function writeSmallOutputFile(
  tree: OutputTree,
  parts: readonly string[],
  mode: number,
  mtime: number,
  body: Buffer,
): { readonly written: WrittenFile } | { readonly reason: string } {
  const fileMode = toFileMode(mode);
  const created = createNewFile(tree, parts, fileMode);
  if ("reason" in created) return created;
  const { path, target, fd } = created;
  let open = true;
  try {
    writeAllSync(fd, body);
    // Created with its mode already; a chmod only when the umask took bits off (96,000 chmods cost ~0.2 s).
    if (tree.umask === undefined || (fileMode & tree.umask) !== 0) fchmodSync(fd, fileMode);
    setMtime(fd, mtime);
    open = false;
    closeSync(fd);
    return { written: { path, size: body.length, sha256: sha256Of(body) } };
  } catch (error) {
    removeHalfWritten(open ? fd : undefined, target);
    throw error;
  }
}

/** Checks the parents of `parts` and opens a new file there (O_EXCL): its relative path, host path and descriptor. */
function createNewFile(
  tree: OutputTree,
  parts: readonly string[],
  mode: number,
): { readonly path: string; readonly target: string; readonly fd: number } | { readonly reason: string } {
  const parentProblem = ensureParentDirectories(tree, parts);
  if (parentProblem !== undefined) return { reason: parentProblem };
  const path = parts.join("/");
  const target = absolutePath(tree, path);
  const opened = openExclusive(target, mode);
  if ("reason" in opened) return opened;
  return { path, target, fd: opened.fd };
}

/** A file being streamed by appendToOutputFile; see openOutputFile. */
export interface OutputFile {
  readonly path: string;
  readonly target: string;
  readonly fd: number;
  readonly hash: Hash;
  /** Bytes appended so far. */
  size: number;
  closed: boolean;
}

/**
 * Creates a new file at `parts` to stream a large body into: appendToOutputFile each piece, then
 * closeOutputFile (or discardOutputFile on failure). Returns a refusal reason like writeSmallOutputFile;
 * throws for host file system failures.
 */
export function openOutputFile(
  tree: OutputTree,
  parts: readonly string[],
): { readonly file: OutputFile } | { readonly reason: string } {
  const created = createNewFile(tree, parts, 0o600);
  if ("reason" in created) return created;
  return { file: { ...created, hash: createHash("sha256"), size: 0, closed: false } };
}

/** Writes and hashes `piece` (synchronously; `piece` is not kept). Throws for host file system failures. */
export function appendToOutputFile(file: OutputFile, piece: Buffer): void {
  writeAllSync(file.fd, piece);
  file.hash.update(piece);
  file.size += piece.length;
}

/** Sets mode and mtime and closes; the file is complete. */
export function closeOutputFile(file: OutputFile, mode: number, mtime: number): WrittenFile {
  fchmodSync(file.fd, toFileMode(mode));
  setMtime(file.fd, mtime);
  file.closed = true;
  closeSync(file.fd);
  return { path: file.path, size: file.size, sha256: file.hash.digest("hex") };
}

/** Removes a file that will not be completed, closing it unless closeOutputFile got that far. */
export function discardOutputFile(file: OutputFile): void {
  removeHalfWritten(file.closed ? undefined : file.fd, file.target);
  file.closed = true;
}

/** Best effort: the error that led here is the one that matters. */
function removeHalfWritten(fd: number | undefined, target: string): void {
  try {
    if (fd !== undefined) closeSync(fd);
  } catch {
    // The descriptor is released by the kernel even when close reports an error.
  }
  try {
    unlinkSync(target);
  } catch {
    // Already gone.
  }
}

/** Sets atime and mtime to `mtime` (seconds); Node takes a negative number for "now", so those go as a Date. */
function setMtime(fd: number, mtime: number): void {
  const time = mtime >= 0 ? mtime : new Date(mtime * 1000);
  futimesSync(fd, time, time);
}

/** One-shot crypto.hash (Node 20.12+) skips a Hash object per file; older Node gets createHash. */
const hashOnce: ((algorithm: string, data: Buffer, encoding: "hex") => string) | undefined =
  typeof cryptoHash === "function" ? cryptoHash : undefined;

function sha256Of(body: Buffer): string {
  return hashOnce === undefined ? createHash("sha256").update(body).digest("hex") : hashOnce("sha256", body, "hex");
}

function absolutePath(tree: OutputTree, path: string): string {
  return tree.root === "/" ? `/${path}` : `${tree.root}/${path}`;
}

/** Creates `target` with O_EXCL (never through a symlink or hard link): an old regular file is unlinked first. */
function openExclusive(target: string, mode: number): { readonly fd: number } | { readonly reason: string } {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return { fd: openSync(target, CREATE_FLAGS, mode) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) throw error;
    }
    const existing = lstatSyncIfPresent(target);
    if (existing === undefined) continue;
    if (!existing.isFile()) return { reason: `a ${describeKind(existing)} already exists at this path` };
    unlinkSync(target);
  }
}

/** Creates (or re-modes) the directory at `parts`; returns a refusal reason if something else is there. */
export function makeOutputDirectory(tree: OutputTree, parts: readonly string[], mode: number): string | undefined {
  const parentProblem = ensureParentDirectories(tree, parts);
  if (parentProblem !== undefined) return parentProblem;
  const path = parts.join("/");
  const target = absolutePath(tree, path);
  const existing = lstatSyncIfPresent(target);
  if (existing === undefined) mkdirSync(target, { mode: toDirectoryMode(mode) });
  else if (!existing.isDirectory()) return `a ${describeKind(existing)} already exists at this path`;
  chmodSync(target, toDirectoryMode(mode));
  tree.knownDirs.add(path);
  return undefined;
}

/** Creates a symlink at `parts` (its target already vetted); returns a refusal reason if the path is taken. */
export function makeOutputSymlink(tree: OutputTree, parts: readonly string[], linkTarget: string): string | undefined {
  const parentProblem = ensureParentDirectories(tree, parts);
  if (parentProblem !== undefined) return parentProblem;
  const target = absolutePath(tree, parts.join("/"));
  const existing = lstatSyncIfPresent(target);
  if (existing !== undefined) return `a ${describeKind(existing)} already exists at this path`;
  symlinkSync(linkTarget, target);
  return undefined;
}

/** Makes every parent of `parts` a real directory, refusing to pass through a symlink or a non-directory. */
function ensureParentDirectories(tree: OutputTree, parts: readonly string[]): string | undefined {
  // Fast path: the direct parent is known, so every ancestor is (a known dir's parents were checked first).
  if (parts.length < 2 || tree.knownDirs.has(parentPathOf(parts))) return undefined;
  let path = "";
  for (const part of parts.slice(0, -1)) {
    path = path === "" ? part : `${path}/${part}`;
    if (tree.knownDirs.has(path)) continue;
    const target = absolutePath(tree, path);
    const existing = lstatSyncIfPresent(target);
    if (existing === undefined) {
      mkdirSync(target, { mode: 0o755 });
    } else if (existing.isSymbolicLink()) {
      return `parent ${path} is a symlink; refusing to write through it`;
    } else if (!existing.isDirectory()) {
      return `parent ${path} is a ${describeKind(existing)}, not a directory`;
    }
    tree.knownDirs.add(path);
  }
  return undefined;
}

function parentPathOf(parts: readonly string[]): string {
  let path = parts[0] ?? "";
  for (let index = 1; index < parts.length - 1; index += 1) path = `${path}/${parts[index]}`;
  return path;
}

/** Writes the whole buffer at the file's current offset, resuming after partial writes. */
function writeAllSync(fd: number, buffer: Buffer): void {
  for (let written = 0; written < buffer.length;) written += writeSync(fd, buffer, written);
}

function lstatSyncIfPresent(target: string): Stats | undefined {
  return lstatSync(target, { throwIfNoEntry: false });
}

function describeKind(info: Stats): string {
  if (info.isDirectory()) return "directory";
  if (info.isSymbolicLink()) return "symlink";
  if (info.isFile()) return "regular file";
  return "special file";
}
