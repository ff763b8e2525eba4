// Writes validated output entries under one destination directory, never following a symlink.
import { createHash } from "node:crypto";
import { closeSync, constants as fsConstants, fchmodSync, futimesSync, lstatSync, openSync, unlinkSync, writev, writevSync } from "node:fs";
import type { Stats } from "node:fs";
import { chmod, lstat, mkdir, symlink } from "node:fs/promises";
import { join } from "node:path";

/** A file fully written by writeOutputFile. */
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
}

/** The entry body could not be read (the archive ended or broke mid-file); the partial file was removed. */
export class EntryBodyError extends Error {
  constructor(path: string, options: { cause: unknown }) {
    super(`reading the content of ${path} failed: ${errorMessage(options.cause)}`, options);
    this.name = "EntryBodyError";
  }
}

// O_EXCL after unlinking any old file: never write through a pre-existing hard link or symlink.
const CREATE_FLAGS = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW;

/** Creates the tree state for `root`, an existing directory given as its real path. */
export function createOutputTree(root: string): OutputTree {
  return { root, knownDirs: new Set() };
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
 * Files of at most SMALL_FILE_BYTES (the bulk of an output tree) are written with synchronous calls once
 * their body is in memory: open, one writev, fchmod, futimes, close. Six async fs calls per file (each a
 * thread-pool round trip and an event-loop wake-up) cost more than the writes themselves. One such file
 * holds the event loop for well under a millisecond on the page cache; extractOutputs yields between
 * entries every few milliseconds. Larger bodies are written asynchronously, WRITE_BATCH_BYTES per writev.
 */
export const SMALL_FILE_BYTES = 256 * 1024;
const WRITE_BATCH_BYTES = 1024 * 1024;

/**
 * Streams `body` (declared `size` bytes) into a new file at `parts`, hashing as it goes. Returns a refusal
 * reason when a parent is a symlink or not a directory, or when something other than a regular file sits
 * at the path (an old regular file is replaced). Throws EntryBodyError when `body` fails and other errors
 * for host file system failures; a half-written file is removed.
 */
export async function writeOutputFile(
  tree: OutputTree,
  parts: readonly string[],
  mode: number,
  mtime: Date,
  size: number,
  body: AsyncIterable<unknown>,
): Promise<{ readonly written: WrittenFile } | { readonly reason: string }> {
  const parentProblem = await ensureParentDirectories(tree, parts);
  if (parentProblem !== undefined) return { reason: parentProblem };
  const path = parts.join("/");
  const target = join(tree.root, path);
  const opened = openExclusive(target);
  if ("reason" in opened) return opened;
  const { fd } = opened;
  let open = true;
  try {
    const hash = createHash("sha256");
    let written = 0;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    for await (const chunk of readBody(path, body)) {
      hash.update(chunk);
      pending.push(chunk);
      pendingBytes += chunk.byteLength;
      if (pendingBytes >= WRITE_BATCH_BYTES) {
        await writeAllAsync(fd, pending);
        written += pendingBytes;
        pending = [];
        pendingBytes = 0;
      }
    }
    if (pendingBytes > 0) {
      if (size <= SMALL_FILE_BYTES) writeAllSync(fd, pending);
      else await writeAllAsync(fd, pending);
      written += pendingBytes;
    }
    fchmodSync(fd, toFileMode(mode));
    if (!Number.isNaN(mtime.getTime())) futimesSync(fd, mtime, mtime);
    open = false;
    closeSync(fd);
    return { written: { path, size: written, sha256: hash.digest("hex") } };
  } catch (error) {
    // Best effort: the error being thrown is the one that matters.
    try {
      if (open) closeSync(fd);
    } catch {
      // The descriptor is released by the kernel even when close reports an error.
    }
    try {
      unlinkSync(target);
    } catch {
      // Already gone.
    }
    throw error;
  }
}

/** Creates `target` with O_EXCL (never through a symlink or hard link): an old regular file is unlinked first. */
function openExclusive(target: string): { readonly fd: number } | { readonly reason: string } {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return { fd: openSync(target, CREATE_FLAGS, 0o600) };
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
export async function makeOutputDirectory(tree: OutputTree, parts: readonly string[], mode: number): Promise<string | undefined> {
  const parentProblem = await ensureParentDirectories(tree, parts);
  if (parentProblem !== undefined) return parentProblem;
  const path = parts.join("/");
  const target = join(tree.root, path);
  const existing = await lstatIfPresent(target);
  if (existing === undefined) await mkdir(target, { mode: toDirectoryMode(mode) });
  else if (!existing.isDirectory()) return `a ${describeKind(existing)} already exists at this path`;
  await chmod(target, toDirectoryMode(mode));
  tree.knownDirs.add(path);
  return undefined;
}

/** Creates a symlink at `parts` (its target already vetted); returns a refusal reason if the path is taken. */
export async function makeOutputSymlink(tree: OutputTree, parts: readonly string[], linkTarget: string): Promise<string | undefined> {
  const parentProblem = await ensureParentDirectories(tree, parts);
  if (parentProblem !== undefined) return parentProblem;
  const target = join(tree.root, parts.join("/"));
  const existing = await lstatIfPresent(target);
  if (existing !== undefined) return `a ${describeKind(existing)} already exists at this path`;
  await symlink(linkTarget, target);
  return undefined;
}

/** Makes every parent of `parts` a real directory, refusing to pass through a symlink or a non-directory. */
async function ensureParentDirectories(tree: OutputTree, parts: readonly string[]): Promise<string | undefined> {
  // Fast path: the direct parent is known, so every ancestor is (a known dir's parents were checked first).
  if (parts.length < 2 || tree.knownDirs.has(parentPathOf(parts))) return undefined;
  let path = "";
  for (const part of parts.slice(0, -1)) {
    path = path === "" ? part : `${path}/${part}`;
    if (tree.knownDirs.has(path)) continue;
    const target = join(tree.root, path);
    const existing = await lstatIfPresent(target);
    if (existing === undefined) {
      await mkdir(target, { mode: 0o755 });
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

async function* readBody(path: string, body: AsyncIterable<unknown>): AsyncGenerator<Buffer> {
  const iterator = body[Symbol.asyncIterator]();
  for (;;) {
    let step: IteratorResult<unknown>;
    try {
      step = await iterator.next();
    } catch (error) {
      throw new EntryBodyError(path, { cause: error });
    }
    if (step.done === true) return;
    yield Buffer.isBuffer(step.value) ? step.value : Buffer.from(step.value as Uint8Array);
  }
}

/** Writes every buffer in order at the file's current offset, resuming after partial writes. */
function writeAllSync(fd: number, buffers: Buffer[]): void {
  let rest = buffers;
  while (rest.length > 0) rest = dropWritten(rest, writevSync(fd, rest));
}

async function writeAllAsync(fd: number, buffers: Buffer[]): Promise<void> {
  let rest = buffers;
  while (rest.length > 0) {
    const from = rest;
    const bytesWritten = await new Promise<number>((resolve, reject) => writev(fd, from, (error, n) => (error ? reject(error) : resolve(n))));
    rest = dropWritten(rest, bytesWritten);
  }
}

function dropWritten(buffers: Buffer[], bytesWritten: number): Buffer[] {
  let skip = bytesWritten;
  let index = 0;
  while (index < buffers.length && skip >= (buffers[index]?.byteLength ?? 0)) {
    skip -= buffers[index]?.byteLength ?? 0;
    index += 1;
  }
  const rest = buffers.slice(index);
  const first = rest[0];
  if (first !== undefined && skip > 0) rest[0] = first.subarray(skip);
  return rest;
}

function lstatSyncIfPresent(target: string): Stats | undefined {
  return lstatSync(target, { throwIfNoEntry: false });
}

async function lstatIfPresent(target: string): Promise<Stats | undefined> {
  try {
    return await lstat(target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

function describeKind(info: Stats): string {
  if (info.isDirectory()) return "directory";
  if (info.isSymbolicLink()) return "symlink";
  if (info.isFile()) return "regular file";
  return "special file";
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
