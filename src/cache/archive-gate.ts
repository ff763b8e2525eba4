// Passes a cache archive on only once it was checked: for the way into the pod, so hostile members never reach its tar.
import { Transform } from "node:stream";
import { constants, createGunzip } from "node:zlib";
import type { CacheCompression } from "../workflow/cache-types.js";
import { ArchiveChecker, CacheArchiveError, decoderError } from "./archive-checker.js";
import type { ArchiveCheckOptions, ArchiveCheckReport } from "./archive-checker.js";
import { describeHead, sniffCompression } from "../transfer/sniff-compression.js";
import { createZstdDecompress } from "./zstd-decompress.js";
import type { ZstdFrameScanner } from "./zstd-frames.js";

export interface ArchiveGate {
  /**
   * Pipe the archive in (from CacheStore.openRead) and its output to the pod's `tar -x`. Each chunk comes out only
   * after every tar header it completes was checked, so the pod never gets a whole header of a refused member; on a
   * problem the stream errors with CacheArchiveError instead (a pipeline then cuts the pod's stdin).
   */
  readonly stream: Transform;
  /** Resolves when the archive ended complete and allowed; rejects with the stream's error. Never an unhandled rejection. */
  readonly done: Promise<ArchiveCheckReport>;
}

export interface ArchiveGateOptions extends ArchiveCheckOptions {
  /**
   * What comes out: "archive" (default), the stored bytes as they are, for a pod that decompresses them itself;
   * "tar", the bytes they decode to, for a pod without the entry's decompressor (compression "none" into the pod).
   */
  readonly output?: "archive" | "tar";
}

/**
 * The hostile-archive rules (src/cache/archive-checker.ts) on the way into the pod: the one place a cache archive is
 * judged. `compression` is the entry's, as its store recorded it; the first bytes must show the same (gzip 1f 8b,
 * zstd 28 b5 2f fd), else the entry is refused. gzip is inflated with Z_SYNC_FLUSH on every write, and a chunk is let
 * through only once gunzip returned all the output its bytes decode to and that output was parsed: the pod, holding
 * only bytes the gate let through, can decode nothing the gate has not checked. zstd is decoded a block at a time,
 * and only the input up to the end of the last complete block goes on (the pod's zstd may emit a raw block's first
 * bytes before the block is whole). The last piece is held back until the archive's end was seen, so a truncated
 * archive never reaches the pod whole.
 */
export function createArchiveGate(compression: CacheCompression, options: ArchiveGateOptions = {}): ArchiveGate {
  const checker = new ArchiveChecker(options);
  const decodedOut = options.output === "tar";
  let decoder: Transform | undefined;
  let scanner: ZstdFrameScanner | undefined;
  let sniffing = compression !== "none";
  let head = Buffer.alloc(0);
  let archiveBytes = 0;
  /** Input bytes passed on (or, decoding, taken): with zstd, the input not yet safe waits in `pending`. */
  let passedBytes = 0;
  let pending: Buffer[] = [];
  let decoded: Buffer[] = [];
  let held: Buffer | undefined;
  let settled = false;
  let resolveDone!: (report: ArchiveCheckReport) => void;
  let rejectDone!: (error: Error) => void;
  const done = new Promise<ArchiveCheckReport>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  done.catch(() => undefined);

  const drainDecoder = (): void => {
    if (decoder === undefined) return;
    for (let out = decoder.read() as Buffer | null; out !== null; out = decoder.read() as Buffer | null) {
      checker.push(out);
      if (decodedOut) decoded.push(out);
    }
  };
  const start = (found: Exclude<CacheCompression, "none">): void => {
    if (found === "gzip") decoder = createGunzip({ flush: constants.Z_SYNC_FLUSH });
    else {
      const zstd = createZstdDecompress();
      scanner = zstd.scanner;
      decoder = zstd;
    }
    decoder.on("readable", drainDecoder);
    decoder.on("error", (error: Error) => checker.fail(decoderError(error)));
  };
  /** Checks the first bytes against the entry's compression; the bytes to go on with, or undefined to wait for more. */
  const sniff = (chunk: Buffer, ended: boolean): Buffer | undefined => {
    head = Buffer.concat([head, chunk]);
    const found = sniffCompression(head, ended);
    if (found === "short") return undefined;
    sniffing = false;
    if (found !== compression)
      checker.fail(
        new CacheArchiveError(
          `the stored entry says ${compression}, but ${found === undefined ? describeHead(head) : `its bytes are ${found}`}`,
        ),
      );
    else start(found);
    return head;
  };
  /** What may go on now that `chunk` (the input just decoded) was checked: it, or the decoded bytes, or zstd's safe input. */
  const takeOutput = (chunk: Buffer): Buffer | undefined => {
    if (decodedOut) {
      const out = decoded.length === 0 ? undefined : Buffer.concat(decoded);
      decoded = [];
      return out;
    }
    if (scanner === undefined) return chunk;
    pending.push(chunk);
    const safe = scanner.safeBytes - passedBytes;
    if (safe <= 0) return undefined;
    const all = Buffer.concat(pending);
    passedBytes += safe;
    pending = safe < all.length ? [all.subarray(safe)] : [];
    return all.subarray(0, safe);
  };
  const passOn = (chunk: Buffer, callback: (error?: Error | null, data?: Buffer) => void): void => {
    const problem = checker.problem;
    if (problem !== undefined) return callback(problem);
    const out = takeOutput(chunk);
    if (out === undefined) return callback();
    const previous = held;
    held = out;
    callback(null, previous);
  };
  const take = (chunk: Buffer, callback: (error?: Error | null, data?: Buffer) => void): void => {
    if (checker.problem !== undefined) return callback(checker.problem);
    if (decoder === undefined) {
      if (!decodedOut) checker.push(chunk);
      else checker.fail(new CacheArchiveError(`the gate decodes only gzip and zstd, not ${compression}`));
      return passOn(chunk, callback);
    }
    // zlib never calls a write's callback once the stream failed (it only errors and is destroyed): go on at whichever comes first.
    const active = decoder;
    let called = false;
    const written = (error?: Error | null): void => {
      if (called) return;
      called = true;
      active.off("error", written);
      if (error) checker.fail(decoderError(error));
      drainDecoder();
      passOn(chunk, callback);
    };
    active.once("error", written);
    active.write(chunk, written);
  };

  const stream = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      archiveBytes += chunk.length;
      if (!sniffing) return take(chunk, callback);
      const first = sniff(chunk, false);
      if (first === undefined) return callback();
      take(first, callback);
    },
    flush(callback) {
      const end = (): void => {
        const problem = checker.finish();
        if (problem !== undefined) return callback(problem);
        settled = true;
        resolveDone({ entries: checker.entries, bytes: checker.bytes, archiveBytes });
        const rest = [held, ...(decodedOut ? decoded : pending)].filter(
          (piece): piece is Buffer => piece !== undefined,
        );
        callback(null, rest.length === 0 ? undefined : Buffer.concat(rest));
      };
      const endDecoder = (): void => {
        if (decoder === undefined || checker.problem !== undefined) return end();
        let called = false;
        const once = (): void => {
          if (called) return;
          called = true;
          end();
        };
        decoder.once("end", once);
        decoder.once("error", once);
        decoder.end();
        // 'end' comes once the output is read to its end.
        drainDecoder();
      };
      if (!sniffing) return endDecoder();
      const first = sniff(Buffer.alloc(0), true);
      if (first === undefined || checker.problem !== undefined) return end();
      take(first, (error, data) => {
        if (error) return callback(error);
        if (data !== undefined) held = Buffer.concat([data, held ?? Buffer.alloc(0)]);
        endDecoder();
      });
    },
  });
  const stop = (error: Error): void => {
    decoder?.destroy();
    if (settled) return;
    settled = true;
    rejectDone(
      error instanceof CacheArchiveError
        ? error
        : new CacheArchiveError(`the cache archive gate was stopped before the archive's end: ${error.message}`),
    );
  };
  stream.on("error", stop);
  stream.on("close", () => stop(new Error("the stream was closed")));
  return { stream, done };
}
