// A child's stdout read into a few reusable buffers, for the one big read of a run: the outputs download.
//
// Why: node reads a child's stdout pipe into a fresh 64 KiB buffer per read, and copies every short read into
// a right-sized one. Downloading 1 GiB that way cost ~0.9 s of the runner's CPU just to read, and the freed
// buffers kept glibc's heap tens of MiB larger than needed (bench/RESULTS.md). Node reads into buffers the
// caller owns (`onread`) only for a net.Socket it connected itself, not for a child's stdio. So the child's
// stdout is one end of a connected Unix socket pair, made through a listening socket in a private directory
// (mode 0700, removed once connected): the child gets the accepted end; we read from the connecting end.
import { mkdtemp, rm } from "node:fs/promises";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";

/** Size of each read buffer: what node's own stream reads use. */
export const READ_BUFFER_BYTES = 64 * 1024;
/** Free buffers kept for reuse; more are allocated while the consumer holds many, and left to the GC after. */
const KEEP_FREE = 16;
/**
 * Longest socket path, in bytes (sun_path holds 108 on Linux, 104 on macOS, NUL included). libuv does not refuse
 * a longer one: it binds the path cut short, which is another file, in another directory.
 */
const MAX_SOCKET_PATH_BYTES = 103;

export interface PooledStdout {
  /** Give it as the child's stdout (stdio[1]), then closeChildEnd() once spawned: the child has its own copy. */
  readonly childEnd: Socket;
  /**
   * What the child writes: each chunk a view of a pool buffer, valid until given back. Ends when every copy of
   * the child's end is closed; errors if the connection fails.
   */
  readonly readable: Readable;
  /** The consumer is done with `chunk` (a chunk `readable` emitted): its buffer may be read into again. */
  giveBack(chunk: Buffer): void;
  /** Closes this process's copy of the child's end (the reader sees the end once the child's copies close too). */
  closeChildEnd(): void;
}

/**
 * Opens a connected pair. Rejects, leaving nothing behind, when the platform or the temp directory does not allow
 * it (a temp dir path too long for a socket, for one): use a pipe then.
 */
export async function openPooledStdout(): Promise<PooledStdout> {
  const dir = await mkdtemp(join(tmpdir(), "knotless-stdout-"));
  const server = createServer();
  try {
    const path = join(dir, "s");
    if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES)
      throw new Error(`the socket path ${path} is longer than ${MAX_SOCKET_PATH_BYTES} bytes`);
    await listen(server, path);
    const pool = new ReadBufferPool();
    const accepted = new Promise<Socket>((resolve) => server.once("connection", resolve));
    let reader: Socket | undefined;
    const readable = new Readable({
      // Reading resumes when the consumer wants more; node's Socket.resume restarts a read the callback stopped.
      read: () => void reader?.resume(),
      destroy: (error, callback) => {
        reader?.destroy();
        callback(error);
      },
    });
    reader = connect({
      path,
      onread: {
        buffer: () => pool.take(),
        // Returning false stops reading until the consumer asks for more (read() above).
        callback: (bytes: number, buffer: Uint8Array) => readable.push(pool.lend(buffer as Buffer, bytes)),
      },
    });
    reader.on("end", () => readable.push(null));
    reader.on("error", (error) => readable.destroy(error));
    const childEnd = await Promise.race([accepted, new Promise<never>((_, reject) => reader?.once("error", reject))]);
    return {
      childEnd,
      readable,
      giveBack: (chunk) => pool.giveBack(chunk),
      closeChildEnd: () => childEnd.destroy(),
    };
  } finally {
    server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

/**
 * Read buffers, each lent out as one chunk and taken again only once that chunk is given back. A buffer whose
 * chunk is never given back is simply not reused (the GC takes it), so a careless consumer costs memory, never
 * data. A chunk given back twice, or one that is not a pool chunk, is ignored.
 */
export class ReadBufferPool {
  private readonly free: Buffer[] = [];
  /** Buffers lent out, by their ArrayBuffer (each pool buffer has its own). */
  private readonly lent = new WeakMap<ArrayBufferLike, Buffer>();

  /** A buffer to read into. */
  take(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);
  }

  /** The first `bytes` of `buffer` (from take()), lent out as a chunk. */
  lend(buffer: Buffer, bytes: number): Buffer {
    this.lent.set(buffer.buffer, buffer);
    return buffer.subarray(0, bytes);
  }

  giveBack(chunk: Buffer): void {
    const buffer = this.lent.get(chunk.buffer);
    if (buffer === undefined) return;
    this.lent.delete(chunk.buffer);
    if (this.free.length < KEEP_FREE) this.free.push(buffer);
  }
}
