// A streaming zstd decompressor for untrusted cache archives: fzstd's Decompress behind the frame walk's bounds.
import { Transform } from "node:stream";
import { Decompress } from "fzstd";
import { CacheArchiveError } from "./archive-checker.js";
import { ZstdFrameScanner } from "./zstd-frames.js";

/**
 * A Transform from zstd to the bytes it decodes to, synchronous per chunk: each write's output (a block at a time,
 * at most 128 KiB each) is pushed before its callback. Memory: the frame's window (at most MAX_ZSTD_WINDOW_BYTES, a
 * larger one is refused before it is allocated) and at most one incomplete block of input. Errors with
 * CacheArchiveError for data that is not zstd, a bound crossed, or a stream that ends inside a frame. fzstd does not
 * check the frames' content checksums; the pod's `zstd -d` does, and the tar inside is checked whole either way.
 * `scanner` says how far the input is made of complete blocks (the gate passes no further).
 */
export function createZstdDecompress(): Transform & { readonly scanner: ZstdFrameScanner } {
  const scanner = new ZstdFrameScanner();
  let stream!: Transform;
  const decoder = new Decompress((data) => {
    if (data.length > 0) stream.push(Buffer.from(data.buffer, data.byteOffset, data.length));
  });
  const decode = (chunk: Uint8Array, final: boolean): Error | undefined => {
    try {
      if (final) scanner.finish();
      else scanner.push(chunk);
      decoder.push(chunk, final);
      return undefined;
    } catch (error) {
      return error instanceof CacheArchiveError ? error : new CacheArchiveError(`cache archive is not valid zstd: ${(error as Error).message}`);
    }
  };
  stream = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      callback(decode(chunk, false));
    },
    flush(callback) {
      callback(decode(new Uint8Array(0), true));
    },
  });
  return Object.assign(stream, { scanner });
}
