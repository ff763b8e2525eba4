// Checks a cache archive as it streams by (hostile input: an earlier run's untrusted code made it), as a sink to tee into.
import { Writable, type Duplex } from "node:stream";
import { createGunzip } from "node:zlib";
import type { CacheCompression } from "./cache-types.js";
import { ArchiveChecker, CacheArchiveError, decoderError } from "./archive-checker.js";
import type { ArchiveCheckOptions, ArchiveCheckReport } from "./archive-checker.js";
import { describeHead, sniffCompression } from "./sniff-compression.js";
import { createHostZstdDecompress } from "./host-zstd-decompress.js";
import { createZstdDecompress } from "./zstd-decompress.js";

export { CacheArchiveError, type ArchiveCheckOptions, type ArchiveCheckReport } from "./archive-checker.js";

/** What a check found in a complete, allowed archive: the counts, and the compression its first bytes showed. */
export interface SavedArchiveReport extends ArchiveCheckReport {
  readonly compression: Exclude<CacheCompression, "none">;
}

export interface ArchiveCheck {
  /**
   * Write the archive's bytes here exactly as the pod sends them (or as the store gives them back), then end it. It
   * never errors and never blocks longer than gunzip takes: after a failure it takes and drops the rest, so that a
   * tee into it and a CacheWriter does not stall.
   */
  readonly stream: Writable;
  /**
   * Resolves once the stream ended on a complete, allowed archive; rejects with CacheArchiveError as soon as a member
   * is refused or the gzip or tar data is broken, or at the end when it is truncated. Never an unhandled rejection.
   */
  readonly done: Promise<SavedArchiveReport>;
}

export interface CreateArchiveCheckOptions extends ArchiveCheckOptions {
  /**
   * The host's zstd binary, to decode zstd archives natively in a child process (src/cache/host-zstd-decompress.ts);
   * absent: fzstd, in this process, at about a tenth of the speed.
   */
  readonly hostZstd?: string;
}

/**
 * A streaming check of an archive the pod just packed. Its compression is told from its first bytes, never from what
 * the pod says: gzip (1f 8b) is decompressed with node:zlib, zstd (28 b5 2f fd) with the host's zstd when `hostZstd`
 * names it, else with fzstd, either behind a frame walk that refuses windows over 128 MiB
 * (src/cache/zstd-frames.ts); anything else is refused. The tar is parsed with the project's own push parser
 * (src/transfer/tar-parser.ts); bodies are skipped as they arrive, so memory stays at a few chunks whatever the size.
 * Refused: what CacheMemberPolicy refuses (absolute, `..`, devices, fifos, unsafe symlinks and hard links, members
 * outside the roots or through an earlier symlink), oversized or malformed headers, and an archive without its end.
 * For the way into the pod, where bytes must not pass before they are checked, see createArchiveGate.
 */
export function createArchiveCheck(options: CreateArchiveCheckOptions = {}): ArchiveCheck {
  const checker = new ArchiveChecker(options);
  let archiveBytes = 0;
  let settled = false;
  let resolveDone!: (report: SavedArchiveReport) => void;
  let rejectDone!: (error: CacheArchiveError) => void;
  const done = new Promise<SavedArchiveReport>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  done.catch(() => undefined);
  let decoder: Duplex | undefined;
  let compression: Exclude<CacheCompression, "none"> | undefined;
  let head = Buffer.alloc(0);

  /** Settles `done` on the first problem; true when there is one. */
  const settleOnProblem = (problem: CacheArchiveError | undefined): boolean => {
    if (problem === undefined) return false;
    if (!settled) {
      settled = true;
      decoder?.destroy();
      rejectDone(problem);
    }
    return true;
  };
  const parse = (chunk: Buffer): void => void settleOnProblem(checker.push(chunk));
  const finish = (): void => {
    if (settleOnProblem(checker.finish()) || settled) return;
    settled = true;
    resolveDone({ entries: checker.entries, bytes: checker.bytes, archiveBytes, compression: compression! });
  };
  /** The decoder once the first bytes told which; undefined while they do not yet (or after a refusal). */
  const decide = (ended: boolean): Duplex | undefined => {
    const found = sniffCompression(head, ended);
    if (found === "short") return undefined;
    if (found === undefined) {
      settleOnProblem(checker.fail(new CacheArchiveError(`cache archive is neither gzip nor zstd: ${describeHead(head)}`)));
      return undefined;
    }
    compression = found;
    decoder = found === "gzip" ? createGunzip() : options.hostZstd !== undefined ? createHostZstdDecompress(options.hostZstd) : createZstdDecompress();
    decoder.on("data", parse);
    decoder.on("error", (error: Error) => settleOnProblem(checker.fail(decoderError(error))));
    return decoder;
  };

  /** Writes into the decoder, calling back once it takes more (or is gone). */
  const feed = (target: Duplex, chunk: Buffer, callback: () => void): void => {
    if (target.write(chunk)) return callback();
    const onDone = (): void => {
      target.off("drain", onDone);
      target.off("close", onDone);
      callback();
    };
    target.on("drain", onDone);
    target.on("close", onDone);
  };
  const stream = new Writable({
    highWaterMark: 1024 * 1024,
    write(chunk: Buffer, _encoding, callback) {
      archiveBytes += chunk.length;
      if (checker.problem !== undefined) return callback();
      if (decoder !== undefined) return feed(decoder, chunk, () => callback());
      head = Buffer.concat([head, chunk]);
      const target = decide(false);
      if (target === undefined) return callback();
      feed(target, head, () => callback());
    },
    final(callback) {
      if (checker.problem === undefined && decoder === undefined) {
        const target = decide(true);
        if (target !== undefined) target.write(head);
      }
      if (checker.problem !== undefined || decoder === undefined) {
        finish();
        return callback();
      }
      let called = false;
      const end = (): void => {
        if (called) return;
        called = true;
        finish();
        callback();
      };
      decoder.once("end", end);
      decoder.once("close", end);
      decoder.end();
    },
    destroy(error, callback) {
      if (!settled) settleOnProblem(checker.fail(new CacheArchiveError(`the cache archive check was stopped before the archive's end${error ? `: ${error.message}` : ""}`)));
      callback(error);
    },
  });
  return { stream, done };
}
