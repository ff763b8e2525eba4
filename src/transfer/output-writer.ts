// Writes validated output entries under one destination directory, never following a symlink.
import { createHash } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import type { Stats } from "node:fs";
import { chmod, lstat, mkdir, open, symlink, unlink } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { join } from "node:path";

/** A file fully written by writeOutputFile. */
export interface WrittenFile {
  readonly path: string;
  readonly size: number;
  readonly sha256: string;
}

/** The destination and the directories already checked to be real directories inside it. */
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
 * Streams `body` into a new file at `parts`, hashing as it goes. Returns a refusal reason when a parent
 * is a symlink or not a directory, or when something other than a regular file sits at the path (an
 * old regular file is replaced). Throws EntryBodyError when `body` fails and other errors for host
 * file system failures.
 */
export async function writeOutputFile(
  tree: OutputTree,
  parts: readonly string[],
  mode: number,
  mtime: Date,
  body: AsyncIterable<unknown>,
): Promise<{ readonly written: WrittenFile } | { readonly reason: string }> {
  const parentProblem = await ensureParentDirectories(tree, parts);
  if (parentProblem !== undefined) return { reason: parentProblem };
  const path = parts.join("/");
  const target = join(tree.root, path);
  const existing = await lstatIfPresent(target);
  if (existing !== undefined) {
    if (!existing.isFile()) return { reason: `a ${describeKind(existing)} already exists at this path` };
    await unlink(target);
  }
  const handle = await open(target, CREATE_FLAGS, 0o600);
  try {
    const hash = createHash("sha256");
    let size = 0;
    for await (const chunk of readBody(path, body)) {
      hash.update(chunk);
      size += chunk.byteLength;
      await writeFully(handle, chunk);
    }
    await handle.chmod(toFileMode(mode));
    if (!Number.isNaN(mtime.getTime())) await handle.utimes(mtime, mtime);
    await handle.close();
    return { written: { path, size, sha256: hash.digest("hex") } };
  } catch (error) {
    await handle.close().catch(() => undefined);
    await unlink(target).catch(() => undefined);
    throw error;
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

async function writeFully(handle: FileHandle, chunk: Buffer): Promise<void> {
  let offset = 0;
  while (offset < chunk.byteLength) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.byteLength - offset);
    offset += bytesWritten;
  }
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
