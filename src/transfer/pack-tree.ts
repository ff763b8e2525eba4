// Streams host directory trees into one tar archive, each tree under its own archive prefix.
import { close as fsClose, constants as fsConstants, fstat as fsFstat, open as fsOpen, read as fsRead } from "node:fs";
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
 * Memory stays flat (at most 4 MiB of small files read ahead, two 256 KiB chunks of a large file, and the
 * stream buffers): the walk advances only as fast as `stream` is read.
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
      await packWalk(pack, walkTrees(roots, prefixes), stats);
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
  /** The directory listing says regular file: packed from its opened descriptor, possibly read ahead. */
  | { readonly kind: "file"; readonly hostPath: string; readonly archivePath: string }
  | { readonly kind: "dir"; readonly hostPath: string; readonly archivePath: string; readonly info: Stats }
  /** Anything else, already lstat'ed: a symlink, a special file, or a file the listing could not type. */
  | { readonly kind: "other"; readonly hostPath: string; readonly archivePath: string; readonly info: Stats };

/** A file read ahead of the writer: its content in memory, its descriptor (too big to buffer), or why not. */
type Loaded =
  | { readonly kind: "buffered"; readonly info: Stats; readonly data: Buffer }
  | { readonly kind: "opened"; readonly info: Stats; readonly fd: number }
  | { readonly kind: "not-a-file" }
  | { readonly kind: "failed"; readonly error: PackError };

/** One walk item in the read-ahead window. */
interface Slot {
  readonly item: WalkItem;
  /** lstat of a "file" item (size known before opening it); an Error when lstat failed. */
  probed?: Stats | Error;
  load?: Promise<Loaded>;
  /** Bytes counted against the read-ahead budget while this slot's content is held. */
  reserved: number;
}

/**
 * Read-ahead: per-file latency (open, fstat, read, close, each a thread-pool round trip) dominates small files,
 * so up to WINDOW_ITEMS walk items ahead of the writer are lstat'ed, and files of at most SMALL_FILE_BYTES are
 * read whole, concurrently, while at most READ_AHEAD_BYTES of content is held. Nothing past a larger file (or a
 * path whose size is unknown yet) is opened before that file was written: large files stream in CHUNK_BYTES
 * reads, and every later file is opened after them, as a purely sequential packer would.
 */
const WINDOW_ITEMS = 64;
const SMALL_FILE_BYTES = 256 * 1024;
const READ_AHEAD_BYTES = 4 * 1024 * 1024;
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

/** Writes every walk item in order while a bounded window of the items after it is read ahead. */
async function packWalk(pack: tarStream.Pack, walk: AsyncGenerator<WalkItem>, stats: MutableStats): Promise<void> {
  const window: Slot[] = [];
  let walkDone = false;
  let heldBytes = 0;

  const startLoads = (): void => {
    for (const slot of window) {
      if (slot.item.kind !== "file" || slot.load) continue;
      const probed = slot.probed;
      if (probed === undefined) return; // size unknown yet: it may be a large file
      if (probed instanceof Error) continue; // the writer opens it itself and reports why it fails
      if (!probed.isFile() || probed.size > SMALL_FILE_BYTES) return;
      if (heldBytes > 0 && heldBytes + probed.size > READ_AHEAD_BYTES) return;
      slot.reserved = probed.size;
      heldBytes += probed.size;
      slot.load = loadFile(slot.item.hostPath);
    }
  };
  const enter = (item: WalkItem): Slot => {
    const slot: Slot = { item, reserved: 0 };
    if (item.kind === "file") {
      lstat(item.hostPath).then(
        (info) => (slot.probed = info),
        (error: unknown) => (slot.probed = error instanceof Error ? error : new Error(String(error))),
      ).finally(startLoads);
    }
    return slot;
  };
  const fill = async (): Promise<void> => {
    while (!walkDone && window.length < WINDOW_ITEMS) {
      const next = await walk.next();
      if (next.done) walkDone = true;
      else window.push(enter(next.value));
    }
    startLoads();
  };

  try {
    for (;;) {
      await fill();
      const slot = window[0];
      if (!slot) return;
      await packItem(pack, slot, stats);
      window.shift();
      heldBytes -= slot.reserved;
    }
  } catch (error) {
    await walk.return(undefined).catch(() => undefined);
    // Descriptors handed over by loads still in the window must be closed (after their reads ended).
    await Promise.all(window.map(async (slot) => {
      const loaded = await slot.load;
      if (loaded?.kind === "opened") await closeFd(loaded.fd);
    }));
    throw error;
  }
}

async function packItem(pack: tarStream.Pack, slot: Slot, stats: MutableStats): Promise<void> {
  const { item } = slot;
  if (item.kind === "dir") {
    await writeEntry(pack, item.hostPath, { name: `${item.archivePath}/`, type: "directory", ...commonHeader(item.info) });
    stats.dirs += 1;
    return;
  }
  if (item.kind === "file" || item.info.isFile()) {
    // The head of the window: nothing before it is left unwritten, so opening it now is always in order.
    const loaded = slot.load ? await slot.load : await loadFile(item.hostPath);
    if (loaded.kind === "failed") throw loaded.error;
    if (loaded.kind === "not-a-file") {
      if (item.kind !== "file") throw new PackError(item.hostPath, "it keeps changing type while being packed");
      // It is not a regular file any more: pack whatever it is now.
      const info = await guard(item.hostPath, () => lstat(item.hostPath));
      await packItem(pack, { item: { kind: "other", hostPath: item.hostPath, archivePath: item.archivePath, info }, reserved: 0 }, stats);
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
  await packOther(pack, item.hostPath, item.archivePath, item.info, stats);
}

async function packOther(pack: tarStream.Pack, hostPath: string, archivePath: string, info: Stats, stats: MutableStats): Promise<void> {
  if (info.isSymbolicLink()) {
    const target = await guard(hostPath, () => readlink(hostPath));
    await writeEntry(pack, hostPath, { name: archivePath, type: "symlink", linkname: target, ...commonHeader(info) });
    stats.symlinks += 1;
  } else if (info.isDirectory()) {
    // A directory that appeared where the walk saw something else.
    await writeEntry(pack, hostPath, { name: `${archivePath}/`, type: "directory", ...commonHeader(info) });
    stats.dirs += 1;
    await packWalk(pack, walkDirectory(hostPath, archivePath), stats);
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

const openFd = (path: string, flags: number): Promise<number> => new Promise((resolve, reject) => fsOpen(path, flags, (error, fd) => (error ? reject(error) : resolve(fd))));
const statFd = (fd: number): Promise<Stats> => new Promise((resolve, reject) => fsFstat(fd, (error, info) => (error ? reject(error) : resolve(info))));
const readFd = (fd: number, buffer: Buffer, offset: number, length: number, position: number): Promise<number> =>
  new Promise((resolve, reject) => fsRead(fd, buffer, offset, length, position, (error, bytesRead) => (error ? reject(error) : resolve(bytesRead))));
const closeFd = (fd: number): Promise<void> => new Promise((resolve) => fsClose(fd, () => resolve()));

/**
 * Opens a path that should be a regular file and reads it whole when it has at most `bufferLimit` bytes;
 * a larger one is handed over still open. Never rejects: failures are returned as PackErrors.
 */
async function loadFile(hostPath: string, bufferLimit = SMALL_FILE_BYTES): Promise<Loaded> {
  let fd: number;
  try {
    fd = await openFd(hostPath, OPEN_FILE_FLAGS);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ELOOP") return { kind: "not-a-file" };
    return { kind: "failed", error: new PackError(hostPath, errorMessage(error), { cause: error }) };
  }
  let handedOver = false;
  try {
    const info = await statFd(fd);
    if (!info.isFile()) return { kind: "not-a-file" };
    if (info.size > bufferLimit) {
      handedOver = true;
      return { kind: "opened", info, fd };
    }
    const data = Buffer.allocUnsafe(info.size);
    let read = 0;
    while (read < info.size) {
      const n = await readFd(fd, data, read, info.size - read, read);
      if (n === 0) break;
      read += n;
    }
    if (read !== info.size) return { kind: "failed", error: new PackError(hostPath, `it shrank while being read (expected ${info.size} bytes, read ${read})`) };
    return { kind: "buffered", info, data };
  } catch (error) {
    return { kind: "failed", error: error instanceof PackError ? error : new PackError(hostPath, errorMessage(error), { cause: error }) };
  } finally {
    if (!handedOver) await closeFd(fd);
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
