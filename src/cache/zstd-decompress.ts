// A streaming zstd decompressor for untrusted cache archives: fzstd's Decompress behind the frame walk's bounds.
import { Transform } from "node:stream";
import { Decompress } from "fzstd";
import { CacheArchiveError } from "./archive-checker.js";
import { ZstdFrameScanner } from "./zstd-frames.js";

/** Output buffered before the decoder waits for its reader (a block yields at most 128 KiB past it). */
const OUTPUT_HIGH_WATER = 1024 * 1024;

/**
 * A Transform from zstd to the bytes it decodes to. Each input chunk is fed to fzstd one block at a time (the frame
 * walk says where blocks end), and once a megabyte of output waits unread it stops until it is read: a few input
 * bytes can decode to 128 KiB (an RLE block takes four), so a chunk is never decoded at once. A write's callback
 * comes once all its output was pushed. Memory: the frame's window (at most MAX_ZSTD_WINDOW_BYTES, a larger one is
 * refused before it is allocated), one incomplete block of input and about a megabyte of output. Errors with
 * CacheArchiveError for data that is not zstd, a bound crossed, or a stream that ends inside a frame. fzstd does not
 * check the frames' content checksums; the pod's `zstd -d` does, and the tar inside is checked whole either way.
 * `scanner` says how far the input is made of complete blocks (the gate passes no further).
 */
export function createZstdDecompress(): Transform & { readonly scanner: ZstdFrameScanner } {
  const scanner = new ZstdFrameScanner();
  let stream!: Transform;
  let resume: (() => void) | undefined;
  /** Pieces of output pushed so far: a pause must follow a push, or no read would ever come to resume it. */
  let pushes = 0;
  const decoder = new Decompress((data) => {
    if (data.length === 0) return;
    pushes += 1;
    stream.push(Buffer.from(data.buffer, data.byteOffset, data.length));
  });
  const toError = (error: unknown): Error =>
    error instanceof CacheArchiveError
      ? error
      : new CacheArchiveError(`cache archive is not valid zstd: ${(error as Error).message}`);
  stream = new Transform({
    readableHighWaterMark: OUTPUT_HIGH_WATER,
    transform(chunk: Buffer, _encoding, callback) {
      let at = 0;
      const next = (): void => {
        const before = pushes;
        try {
          while (at < chunk.length) {
            const end = scanner.walk(chunk, at);
            decoder.push(chunk.subarray(at, end), false);
            at = end;
            // Only after a push: a read that resumed this and got nothing would leave the stream "reading" for ever.
            if (at < chunk.length && pushes !== before && stream.readableLength >= OUTPUT_HIGH_WATER) {
              resume = next;
              return;
            }
          }
        } catch (error) {
          return callback(toError(error));
        }
        callback();
      };
      next();
    },
    flush(callback) {
      try {
        scanner.finish();
        decoder.push(new Uint8Array(0), true);
        callback();
      } catch (error) {
        callback(toError(error));
      }
    },
  });
  const read = stream._read.bind(stream);
  stream._read = (size: number): void => {
    const waiting = resume;
    resume = undefined;
    waiting?.();
    // Then Transform's own: a chunk the resumed decode finished while the output was full had its write callback held
    // back for this read to release; skipping it stalled the stream for good.
    read(size);
  };
  return Object.assign(stream, { scanner });
}
