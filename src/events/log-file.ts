// A log file written in the background that a crashing process can still finish synchronously.
//
// Why not fs.WriteStream: a runner that crashes (an uncaught exception) exits from inside its handler, and a
// stream's buffered lines die with it, the very lines that say what happened last. Here every chunk's place in
// the file is known (positional writes), so flushSync can write the chunk in flight again and the queued text
// after it, in order, whatever the thread pool has done meanwhile: writing the same bytes at the same place twice
// changes nothing.
import {
  close as closeFd,
  closeSync,
  constants as fsConstants,
  fstatSync,
  ftruncateSync,
  openSync,
  write,
  writeSync,
} from "node:fs";

/** A log file's first failure, with the file it happened to. */
export class LogWriteError extends Error {
  override readonly name = "LogWriteError";
  /** The system error code (ENOENT, EISDIR, ENOSPC, ...). */
  readonly code: string | undefined;

  constructor(
    readonly path: string,
    cause: NodeJS.ErrnoException,
  ) {
    super(`cannot write ${path}: ${cause.message}`, { cause });
    this.code = cause.code;
  }
}

/** A chunk handed to the file system: its bytes and where they go (undefined: at the file's offset, see #positional). */
interface Chunk {
  readonly bytes: Buffer;
  readonly position: number | undefined;
}

/**
 * A file written line by line, in order, that never throws: the file is created (truncated) at once, text is
 * queued and written in the background (one write at a time, batching what arrived meanwhile), and after the
 * first error every write is dropped, `onFailure` is told (once, never from inside the constructor or write) and
 * close rejects with a LogWriteError.
 */
export class LogFile {
  #fd: number | undefined;
  #failure: NodeJS.ErrnoException | undefined;
  /** Whether chunks are written at known positions: false for a file that cannot seek (a FIFO), where a write goes to its end. */
  #positional = true;
  /** Bytes handed to the file system so far: where the next chunk goes. */
  #position = 0;
  #queued: string[] = [];
  #inFlight: Chunk | undefined;
  #closing = false;
  #drained: (() => void) | undefined;
  #closed: Promise<void> | undefined;
  /** Bytes the file system has taken so far, in order: what a reader of the file may read. */
  #written = 0;
  /** Bytes of the queued text, not yet handed to the file system. */
  #queuedBytes = 0;
  /** Waiters for the file to hold a length (whenWritten). */
  #waiters: Array<{ readonly length: number; readonly resolve: () => void }> = [];

  readonly #onWritten: ((length: number) => void) | undefined;
  readonly #onFailure: ((error: LogWriteError) => void) | undefined;

  /**
   * `onWritten` is told the file's length each time a chunk is in it (whole lines, as they were queued);
   * `onFailure` is told of the first failed write (ENOSPC, say).
   */
  /**
   * `resumeAt`, for a run continued after its runner stopped: the file is kept and cut to that many bytes (what its
   * checkpoint says was written), and written on from there, instead of being truncated.
   */
  constructor(
    readonly path: string,
    hooks: {
      readonly onWritten?: (length: number) => void;
      readonly onFailure?: (error: LogWriteError) => void;
      readonly resumeAt?: number;
    } = {},
  ) {
    this.#onWritten = hooks.onWritten;
    this.#onFailure = hooks.onFailure;
    try {
      this.#fd = openForWriting(path, hooks.resumeAt);
      this.#position = this.#written = hooks.resumeAt ?? 0;
    } catch (error) {
      this.#fail(error as NodeJS.ErrnoException);
    }
  }

  /** Bytes written to the file so far plus those queued: the file's length once the queue is written. */
  get queuedLength(): number {
    return this.#position + this.#queuedBytes;
  }

  /** Bytes the file system has taken so far. */
  get writtenLength(): number {
    return this.#written;
  }

  /** Resolves with true once the file holds `length` bytes, or with false when it failed or was closed before. */
  whenWritten(length: number): Promise<boolean> {
    if (this.#written >= length) return Promise.resolve(true);
    if (this.#failure !== undefined || this.#fd === undefined) return Promise.resolve(false);
    return new Promise((resolve) => this.#waiters.push({ length, resolve: () => resolve(this.#written >= length) }));
  }

  #wake(all: boolean): void {
    const ready = this.#waiters.filter((waiter) => all || this.#written >= waiter.length);
    if (ready.length === 0) return;
    this.#waiters = this.#waiters.filter((waiter) => !ready.includes(waiter));
    for (const waiter of ready) waiter.resolve();
  }

  /** Keeps the first failure and tells onFailure of it, on a later tick: its caller may not be ready for it yet. */
  #fail(error: NodeJS.ErrnoException): void {
    if (this.#failure !== undefined) return;
    this.#failure = error;
    const onFailure = this.#onFailure;
    if (onFailure) queueMicrotask(() => onFailure(new LogWriteError(this.path, error)));
  }

  write(text: string): void {
    if (this.#failure !== undefined || this.#fd === undefined || this.#closing) return;
    this.#queued.push(text);
    this.#queuedBytes += Buffer.byteLength(text);
    if (this.#inFlight === undefined) this.#writeNext();
  }

  /**
   * Writes everything written so far before returning, for a process about to exit from a crash: the chunk in
   * flight again (at its own position) and the queued text after it. Never throws; a failure is kept for close.
   */
  flushSync(): void {
    const fd = this.#fd;
    if (fd === undefined || this.#failure !== undefined) return;
    const rest = this.#takeQueued();
    try {
      // Without positions the chunk in flight cannot be written again safely: it may be written twice or lost.
      if (this.#inFlight !== undefined && this.#positional) writeAllSync(fd, this.#inFlight);
      if (rest !== undefined) writeAllSync(fd, rest);
    } catch (error) {
      this.#fail(error as NodeJS.ErrnoException);
    }
  }

  /** Writes what is queued, closes the file and resolves; rejects with a LogWriteError after a failure. Idempotent. */
  close(): Promise<void> {
    return (this.#closed ??= this.#close());
  }

  async #close(): Promise<void> {
    this.#closing = true;
    if (this.#inFlight !== undefined) await new Promise<void>((resolve) => (this.#drained = resolve));
    const fd = this.#fd;
    this.#fd = undefined;
    this.#wake(true);
    if (fd !== undefined) {
      await new Promise<void>((resolve) =>
        closeFd(fd, (error) => {
          if (error) this.#fail(error);
          resolve();
        }),
      );
    }
    if (this.#failure !== undefined) throw new LogWriteError(this.path, this.#failure);
  }

  /**
   * Stops writing and closes the file synchronously (after flushSync, on the crash path); never throws. With a
   * background write still pending the descriptor is left open for the exiting process to release: closed now,
   * its number could be reused by the next open before that write runs.
   */
  closeSync(): void {
    const fd = this.#fd;
    this.#fd = undefined;
    this.#closing = true;
    if (fd === undefined || this.#inFlight !== undefined) return;
    try {
      closeSync(fd);
    } catch {
      // The kernel releases the descriptor when the process exits anyway.
    }
  }

  /** The queued text as the next chunk (its position taken), or undefined when nothing is queued. */
  #takeQueued(): Chunk | undefined {
    if (this.#queued.length === 0) return undefined;
    const bytes = Buffer.from(this.#queued.join(""));
    this.#queued = [];
    this.#queuedBytes = 0;
    const chunk = { bytes, position: this.#positional ? this.#position : undefined };
    this.#position += bytes.length;
    return chunk;
  }

  #writeNext(): void {
    const fd = this.#fd;
    const chunk = fd === undefined || this.#failure !== undefined ? undefined : this.#takeQueued();
    this.#inFlight = chunk;
    if (fd === undefined || chunk === undefined) {
      if (fd === undefined || this.#failure !== undefined) this.#wake(true);
      this.#drained?.();
      return;
    }
    this.#writeFrom(fd, chunk, 0);
  }

  #writeFrom(fd: number, chunk: Chunk, done: number): void {
    const position = chunk.position === undefined ? null : chunk.position + done;
    write(fd, chunk.bytes, done, chunk.bytes.length - done, position, (error, written) => {
      if (error?.code === "ESPIPE" && this.#positional) {
        // A FIFO or a terminal: write at its end from now on (flushSync then cannot redo a chunk in flight).
        this.#positional = false;
        this.#writeFrom(fd, { bytes: chunk.bytes, position: undefined }, done);
        return;
      }
      if (error) {
        this.#fail(error);
        this.#queued = [];
        this.#writeNext();
        return;
      }
      if (done + written < chunk.bytes.length) {
        this.#writeFrom(fd, chunk, done + written);
        return;
      }
      this.#written += chunk.bytes.length;
      this.#onWritten?.(this.#written);
      this.#wake(false);
      this.#writeNext();
    });
  }
}

const OPEN_FLAGS = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_TRUNC;

/**
 * Opens (creating or truncating) `path`, on this thread; with `keep`, a regular file is not truncated but cut to
 * `keep` bytes (a file shorter than that is an error: the bytes a checkpoint counted are not all there). Opened non-blocking first: a FIFO nobody reads would
 * otherwise hold the whole process in open(2) (it fails with ENXIO instead). Anything but a regular file is then
 * opened again without O_NONBLOCK (it has a reader by then), so that its writes wait rather than fail.
 */
function openForWriting(path: string, keep?: number): number {
  const flags = keep === undefined ? OPEN_FLAGS : OPEN_FLAGS & ~fsConstants.O_TRUNC;
  const fd = openSync(path, flags | fsConstants.O_NONBLOCK, 0o666);
  let regular = false;
  try {
    const stat = fstatSync(fd);
    regular = stat.isFile();
    if (regular && keep !== undefined) {
      if (stat.size < keep) {
        closeSync(fd);
        regular = true; // closed here
        throw Object.assign(new Error(`${path} holds ${stat.size} bytes, fewer than the ${keep} its checkpoint counted`), {
          code: "ESHORT",
        });
      }
      ftruncateSync(fd, keep);
    }
    if (regular) return fd;
    return openSync(path, OPEN_FLAGS, 0o666);
  } finally {
    if (!regular) closeSync(fd);
  }
}

function writeAllSync(fd: number, chunk: Chunk): void {
  for (let done = 0; done < chunk.bytes.length;) {
    done += writeSync(
      fd,
      chunk.bytes,
      done,
      chunk.bytes.length - done,
      chunk.position === undefined ? null : chunk.position + done,
    );
  }
}
