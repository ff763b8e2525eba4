// Streams host directory trees into one tar archive, each tree under its own archive prefix.
import { close as fsClose, closeSync, constants as fsConstants, fstatSync, openSync, read as fsRead, readSync } from "node:fs";
import type { Stats } from "node:fs";
import { lstat, readdir, readlink } from "node:fs/promises";
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
 * Memory stays flat (one small file of at most 256 KiB, or two 256 KiB chunks of a large file, and the
 * stream buffers): the walk advances only as fast as `stream` is read. Small files are read with
 * synchronous calls in slices of at most about 5 ms of event-loop time (see SLICE_MS).
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
      await packWalk(pack, walkTrees(roots, prefixes), stats, { startedAt: performance.now() });
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

/** One path of the walk, in archive order. */
type WalkItem =
  /** The directory listing says regular file: packed from its opened descriptor. */
  | { readonly kind: "file"; readonly hostPath: string; readonly archivePath: string }
  | { readonly kind: "dir"; readonly hostPath: string; readonly archivePath: string; readonly info: Stats }
  /** Anything else, already lstat'ed: a symlink, a special file, or a file the listing could not type. */
  | { readonly kind: "other"; readonly hostPath: string; readonly archivePath: string; readonly info: Stats };

/** A file opened by loadFileNow: its content in memory, its descriptor (too big to buffer), or why not. */
type Loaded =
  | { readonly kind: "buffered"; readonly info: Stats; readonly data: Buffer }
  | { readonly kind: "opened"; readonly info: Stats; readonly fd: number }
  | { readonly kind: "not-a-file" }
  | { readonly kind: "failed"; readonly error: PackError };

/**
 * Small files are read with synchronous calls (open, fstat, read, close) in slices of the event loop.
 * Each async fs call is a thread-pool round trip plus an event-loop wake-up; for a 10 KiB file those cost
 * more than the read itself: packing 1 GiB / 50,000 files took 11.7-13.1 s with a 64-entry async read-ahead
 * and takes about 4-5 s with synchronous reads (bench/RESULTS.md). A worker_thread would not block the loop
 * at all, but would pay a structured-clone/transfer per chunk, a second tar-stream instance and a thread
 * start-up per pack, for the same syscalls; bounded slices keep the daemon (which embeds this library)
 * responsive: after SLICE_MS of packing, the walk yields with setImmediate so timers and I/O run. One
 * slice may overrun by the time one file of at most SMALL_FILE_BYTES takes to read (well under a
 * millisecond from the page cache; a cold or network file system can make that single read longer).
 * Larger files stream in CHUNK_BYTES async reads (the next read overlapping the write) and never block.
 */
const SLICE_MS = 5;
const SMALL_FILE_BYTES = 256 * 1024;
const CHUNK_BYTES = 256 * 1024;

async function* walkTrees(roots: readonly PackRoot[], prefixes: readonly string[]): AsyncGenerator<WalkItem> {
  for (const [index, root] of roots.entries()) yield* walkDirectory(root.hostDir, prefixes[index] ?? "");
}

async function* walkDirectory(hostDir: string, archiveDir: string): AsyncGenerator<WalkItem> {
  for (const { name, looksLikeFile } of await readSortedEntries(hostDir)) {
    const hostPath = join(hostDir, name);
    const archivePath = `${archiveDir}/${name}`;
    // Regular files (the bulk of a checkout) skip lstat here: they are checked on their opened descriptor.
    if (looksLikeFile) {
      yield { kind: "file", hostPath, archivePath };
      continue;
    }
    const info = await guard(hostPath, () => lstat(hostPath));
    if (info.isDirectory()) {
      yield { kind: "dir", hostPath, archivePath, info };
      yield* walkDirectory(hostPath, archivePath);
    } else yield { kind: "other", hostPath, archivePath, info };
  }
}

/** Tracks how long the event loop has been held since the walk last yielded to it. */
interface Slice {
  startedAt: number;
}

/** Writes every walk item in order, one at a time, yielding to the event loop every SLICE_MS. */
async function packWalk(pack: tarStream.Pack, walk: AsyncGenerator<WalkItem>, stats: MutableStats, slice: Slice): Promise<void> {
  // for-await returns the generator (closing its directory walk) when packItem throws.
  for await (const item of walk) {
    await packItem(pack, item, stats, slice);
    if (performance.now() - slice.startedAt >= SLICE_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      slice.startedAt = performance.now();
    }
  }
}

async function packItem(pack: tarStream.Pack, item: WalkItem, stats: MutableStats, slice: Slice): Promise<void> {
  if (item.kind === "dir") {
    await writeEntry(pack, item.hostPath, { name: `${item.archivePath}/`, type: "directory", ...commonHeader(item.info) });
    stats.dirs += 1;
    return;
  }
  if (item.kind === "file" || item.info.isFile()) {
    // Everything before this item is written: opening it now keeps the archive in walk order.
    const loaded = loadFileNow(item.hostPath);
    if (loaded.kind === "failed") throw loaded.error;
    if (loaded.kind === "not-a-file") {
      if (item.kind !== "file") throw new PackError(item.hostPath, "it keeps changing type while being packed");
      // It is not a regular file any more: pack whatever it is now.
      const info = await guard(item.hostPath, () => lstat(item.hostPath));
      await packItem(pack, { kind: "other", hostPath: item.hostPath, archivePath: item.archivePath, info }, stats, slice);
      return;
    }
    const size =
      loaded.kind === "buffered"
        ? await writeBufferedFile(pack, item.hostPath, item.archivePath, loaded.info, loaded.data)
        : await streamOpenedFile(pack, item.hostPath, item.archivePath, loaded.info, loaded.fd);
    stats.bytes += size;
    stats.files += 1;
    return;
  }
  await packOther(pack, item.hostPath, item.archivePath, item.info, stats, slice);
}

async function packOther(pack: tarStream.Pack, hostPath: string, archivePath: string, info: Stats, stats: MutableStats, slice: Slice): Promise<void> {
  if (info.isSymbolicLink()) {
    const target = await guard(hostPath, () => readlink(hostPath));
    await writeEntry(pack, hostPath, { name: archivePath, type: "symlink", linkname: target, ...commonHeader(info) });
    stats.symlinks += 1;
  } else if (info.isDirectory()) {
    // A directory that appeared where the walk saw something else.
    await writeEntry(pack, hostPath, { name: `${archivePath}/`, type: "directory", ...commonHeader(info) });
    stats.dirs += 1;
    await packWalk(pack, walkDirectory(hostPath, archivePath), stats, slice);
  } else {
    stats.skipped.push({ path: hostPath, reason: `${describeSpecialFile(info)} cannot be archived` });
  }
}

async function readSortedEntries(hostDir: string): Promise<Array<{ name: string; looksLikeFile: boolean }>> {
  return guard(hostDir, async () => {
    const entries = (await readdir(hostDir, { withFileTypes: true })).map((entry) => ({ name: entry.name, looksLikeFile: entry.isFile() }));
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

const readFd = (fd: number, buffer: Buffer, offset: number, length: number, position: number): Promise<number> =>
  new Promise((resolve, reject) => fsRead(fd, buffer, offset, length, position, (error, bytesRead) => (error ? reject(error) : resolve(bytesRead))));
const closeFd = (fd: number): Promise<void> => new Promise((resolve) => fsClose(fd, () => resolve()));

/**
 * Opens a path that should be a regular file, synchronously, and reads it whole when it has at most
 * SMALL_FILE_BYTES; a larger one is handed over still open (and is read asynchronously). Never throws:
 * failures are returned as PackErrors.
 */
function loadFileNow(hostPath: string): Loaded {
  let fd: number;
  try {
    fd = openSync(hostPath, OPEN_FILE_FLAGS);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ELOOP") return { kind: "not-a-file" };
    return { kind: "failed", error: new PackError(hostPath, errorMessage(error), { cause: error }) };
  }
  let handedOver = false;
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) return { kind: "not-a-file" };
    if (info.size > SMALL_FILE_BYTES) {
      handedOver = true;
      return { kind: "opened", info, fd };
    }
    const data = Buffer.allocUnsafe(info.size);
    let read = 0;
    while (read < info.size) {
      const n = readSync(fd, data, read, info.size - read, read);
      if (n === 0) break;
      read += n;
    }
    if (read !== info.size) return { kind: "failed", error: new PackError(hostPath, `it shrank while being read (expected ${info.size} bytes, read ${read})`) };
    return { kind: "buffered", info, data };
  } catch (error) {
    return { kind: "failed", error: new PackError(hostPath, errorMessage(error), { cause: error }) };
  } finally {
    if (!handedOver) closeSync(fd);
  }
}

async function writeBufferedFile(pack: tarStream.Pack, hostPath: string, archivePath: string, info: Stats, data: Buffer): Promise<number> {
  const { sink, completed } = openEntry(pack, hostPath, { name: archivePath, type: "file", size: data.length, ...commonHeader(info) });
  if (data.length > 0) sink.write(data);
  sink.end(null);
  await guard(hostPath, () => completed);
  return data.length;
}

/**
 * Streams an opened regular file into the archive with backpressure, reading the next chunk while the
 * current one is written, and closes it. Returns its size (fstat's, taken before the first read).
 */
async function streamOpenedFile(pack: tarStream.Pack, hostPath: string, archivePath: string, info: Stats, fd: number): Promise<number> {
  const size = info.size;
  const readChunk = async (position: number): Promise<Buffer> => {
    const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, size - position));
    const n = await readFd(fd, buffer, 0, buffer.length, position);
    return buffer.subarray(0, n);
  };
  let pending: Promise<Buffer> | undefined;
  try {
    const { sink, completed } = openEntry(pack, hostPath, { name: archivePath, type: "file", size, ...commonHeader(info) });
    let written = 0;
    try {
      pending = size > 0 ? readChunk(0) : undefined;
      while (pending) {
        const chunk = await pending;
        pending = undefined;
        if (chunk.length === 0) break;
        written += chunk.length;
        if (written < size) pending = readChunk(written);
        if (!sink.write(chunk)) await waitForDrain(sink, hostPath);
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
    // Never close a descriptor a read is still using: its number could be reused by the next open.
    await pending?.catch(() => undefined);
    await closeFd(fd);
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
