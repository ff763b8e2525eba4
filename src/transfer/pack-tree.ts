// Streams host directory trees into one tar archive, each tree under its own archive prefix.
import { constants as fsConstants } from "node:fs";
import type { Dir, Stats } from "node:fs";
import { lstat, open, opendir, readlink } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import * as tarStream from "tar-stream";

/** One host directory whose contents go into the archive under `archivePrefix` (e.g. "work"). */
export interface PackRoot {
  readonly hostDir: string;
  readonly archivePrefix: string;
}

/** A host path left out of the archive (socket, fifo, device) and why. `path` is the host path. */
export interface SkippedPath {
  readonly path: string;
  readonly reason: string;
}

/** What went into the archive; `bytes` counts regular file content only. */
export interface PackStats {
  readonly files: number;
  readonly dirs: number;
  readonly symlinks: number;
  readonly bytes: number;
  readonly skipped: readonly SkippedPath[];
}

/** Packing failed on one host path (unreadable, vanished, changed while read). */
export class PackError extends Error {
  readonly path: string;

  constructor(path: string, message: string, options?: { cause?: unknown }) {
    super(`cannot pack ${path}: ${message}`, options);
    this.name = "PackError";
    this.path = path;
  }
}

interface MutableStats {
  files: number;
  dirs: number;
  symlinks: number;
  bytes: number;
  skipped: SkippedPath[];
}

type Sink = ReturnType<tarStream.Pack["entry"]>;
type EntryHeader = Parameters<tarStream.Pack["entry"]>[0];

// O_NONBLOCK keeps open() from hanging if a fifo replaced the file after lstat; it is a no-op for regular files.
const OPEN_FILE_FLAGS = fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK;

/**
 * Packs the contents of every root into one tar stream; the root directories themselves get no entry
 * (they are extracted into mount points that may not be chmod-able). Entries are named
 * `<archivePrefix>/<relative path>`, directories with a trailing slash, visited depth first in sorted
 * name order. Files keep permission bits and mtime, owner is 0:0 without names, symlinks are kept
 * as is, hard links become separate files, sockets/fifos/devices are skipped and listed in `skipped`.
 *
 * Memory stays flat (a few stream buffers of at most 64 KiB): the walk advances only as fast as `stream`
 * is read.
 * `done` resolves once the end-of-archive bytes were pushed into `stream`. On any error (unreadable,
 * vanished or resized file; `stream` destroyed by its consumer) `done` rejects with a PackError naming
 * the path and `stream` is destroyed with the same error. `done` is pre-marked as handled so an
 * ignored rejection does not crash the process; the error also surfaces on `stream`.
 * Throws synchronously when an archive prefix is not a plain relative path.
 */
export function packTrees(roots: readonly PackRoot[]): { stream: Readable; done: Promise<PackStats> } {
  const prefixes = roots.map((root) => normalizePrefix(root.archivePrefix));
  const pack = tarStream.pack();
  // The pack's errors are re-emitted by `stream`, which is what consumers listen to.
  pack.on("error", () => undefined);
  const stream = Readable.from(pack, { objectMode: false });
  let finished = false;
  stream.once("close", () => {
    if (!finished) pack.destroy(new Error("archive stream closed by its consumer before packing finished"));
  });

  const done = (async (): Promise<PackStats> => {
    const stats: MutableStats = { files: 0, dirs: 0, symlinks: 0, bytes: 0, skipped: [] };
    try {
      for (const [index, root] of roots.entries()) {
        await packDirectory(pack, root.hostDir, prefixes[index] ?? "", stats);
      }
      finished = true;
      pack.finalize();
      return { ...stats, skipped: [...stats.skipped] };
    } catch (error) {
      finished = true;
      const failure = error instanceof PackError ? error : new PackError("archive", String(error), { cause: error });
      pack.destroy(failure);
      stream.destroy(failure);
      throw failure;
    }
  })();
  done.catch(() => undefined);
  return { stream, done };
}

function normalizePrefix(prefix: string): string {
  const parts = prefix.split("/").filter((part) => part !== "");
  const invalid = prefix.startsWith("/") || parts.length === 0 || parts.some((part) => part === "." || part === "..");
  if (invalid) throw new TypeError(`archive prefix must be a relative path without . or .. components, got ${JSON.stringify(prefix)}`);
  return parts.join("/");
}

async function packDirectory(pack: tarStream.Pack, hostDir: string, archiveDir: string, stats: MutableStats): Promise<void> {
  for (const { name, looksLikeFile } of await readSortedEntries(hostDir)) {
    const hostPath = join(hostDir, name);
    const archivePath = `${archiveDir}/${name}`;
    // Regular files (the bulk of a checkout) skip lstat: packFile checks the opened descriptor instead.
    const packedSize = looksLikeFile ? await packFile(pack, hostPath, archivePath) : undefined;
    if (packedSize !== undefined) {
      stats.bytes += packedSize;
      stats.files += 1;
      continue;
    }
    const info = await guard(hostPath, () => lstat(hostPath));
    if (info.isDirectory()) {
      await writeEntry(pack, hostPath, { name: `${archivePath}/`, type: "directory", ...commonHeader(info) });
      stats.dirs += 1;
      await packDirectory(pack, hostPath, archivePath, stats);
    } else if (info.isFile()) {
      const size = await packFile(pack, hostPath, archivePath);
      if (size === undefined) throw new PackError(hostPath, "it keeps changing type while being packed");
      stats.bytes += size;
      stats.files += 1;
    } else if (info.isSymbolicLink()) {
      const target = await guard(hostPath, () => readlink(hostPath));
      await writeEntry(pack, hostPath, { name: archivePath, type: "symlink", linkname: target, ...commonHeader(info) });
      stats.symlinks += 1;
    } else {
      stats.skipped.push({ path: hostPath, reason: `${describeSpecialFile(info)} cannot be archived` });
    }
  }
}

async function readSortedEntries(hostDir: string): Promise<Array<{ name: string; looksLikeFile: boolean }>> {
  return guard(hostDir, async () => {
    const entries: Array<{ name: string; looksLikeFile: boolean }> = [];
    const dir: Dir = await opendir(hostDir);
    for await (const entry of dir) entries.push({ name: entry.name, looksLikeFile: entry.isFile() });
    return entries.sort((left, right) => compareNames(left.name, right.name));
  });
}

function compareNames(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}

function commonHeader(info: Stats): { mode: number; mtime: Date; uid: number; gid: number } {
  return { mode: info.mode & 0o7777, mtime: info.mtime, uid: 0, gid: 0 };
}

function describeSpecialFile(info: Stats): string {
  if (info.isSocket()) return "socket";
  if (info.isFIFO()) return "fifo";
  if (info.isCharacterDevice()) return "character device";
  if (info.isBlockDevice()) return "block device";
  return "special file";
}

/**
 * Streams one regular file into the archive with backpressure and returns its size, or undefined
 * (nothing written) when the path is not a regular file any more (a symlink, directory or fifo now).
 */
async function packFile(pack: tarStream.Pack, hostPath: string, archivePath: string): Promise<number | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(hostPath, OPEN_FILE_FLAGS);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ELOOP") return undefined;
    throw new PackError(hostPath, errorMessage(error), { cause: error });
  }
  try {
    const info = await guard(hostPath, () => handle.stat());
    if (!info.isFile()) return undefined;
    const size = info.size;
    const { sink, completed } = openEntry(pack, hostPath, { name: archivePath, type: "file", size, ...commonHeader(info) });
    let written = 0;
    try {
      if (size > 0) {
        for await (const chunk of handle.createReadStream({ start: 0, end: size - 1, autoClose: false })) {
          written += (chunk as Buffer).byteLength;
          if (!sink.write(chunk)) await waitForDrain(sink, hostPath);
        }
      }
      if (written !== size) throw new PackError(hostPath, `it shrank while being read (expected ${size} bytes, read ${written})`);
    } catch (error) {
      const failure = error instanceof PackError ? error : new PackError(hostPath, errorMessage(error), { cause: error });
      sink.destroy(failure);
      throw failure;
    }
    sink.end(null);
    await guard(hostPath, () => completed);
    return size;
  } finally {
    await handle.close().catch(() => undefined);
  }
}

async function writeEntry(pack: tarStream.Pack, hostPath: string, header: EntryHeader): Promise<void> {
  const { completed } = openEntry(pack, hostPath, header);
  await guard(hostPath, () => completed);
}

function openEntry(pack: tarStream.Pack, hostPath: string, header: EntryHeader): { sink: Sink; completed: Promise<void> } {
  let sink: Sink | undefined;
  let failure: unknown;
  const completed = new Promise<void>((resolve, reject) => {
    try {
      sink = pack.entry(header, (error) => (error ? reject(error) : resolve()));
    } catch (error) {
      failure = error;
    }
  });
  completed.catch(() => undefined);
  if (sink === undefined) throw new PackError(hostPath, `the archive stream refused the entry: ${errorMessage(failure)}`, { cause: failure });
  // Entry errors reach us through the entry callback; without a listener streamx would throw them.
  sink.on("error", () => undefined);
  return { sink, completed };
}

function waitForDrain(sink: Sink, hostPath: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onDrain = (): void => {
      sink.off("close", onClose);
      resolve();
    };
    const onClose = (): void => {
      sink.off("drain", onDrain);
      reject(new PackError(hostPath, "the archive stream was closed while the file was written"));
    };
    sink.once("drain", onDrain);
    sink.once("close", onClose);
  });
}

async function guard<T>(hostPath: string, action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof PackError) throw error;
    throw new PackError(hostPath, errorMessage(error), { cause: error });
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
