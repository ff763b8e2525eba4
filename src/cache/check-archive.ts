// Checks a cache archive as it streams by (hostile input: an earlier run's untrusted code made it), as a sink to tee into.
import { Writable } from "node:stream";
import { createGunzip } from "node:zlib";
import type { Gunzip } from "node:zlib";
import type { CacheCompression } from "./cache-types.js";
import { ArchiveChecker, CacheArchiveError, gzipError } from "./archive-checker.js";
import type { ArchiveCheckOptions, ArchiveCheckReport } from "./archive-checker.js";

export { CacheArchiveError, type ArchiveCheckOptions, type ArchiveCheckReport } from "./archive-checker.js";

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
  readonly done: Promise<ArchiveCheckReport>;
}

/**
 * A streaming check: gzip is decompressed with node:zlib and the tar parsed with the project's own push parser
 * (src/transfer/tar-parser.ts); bodies are skipped as they arrive, so memory stays at a few chunks whatever the size.
 * Refused: what CacheMemberPolicy refuses (absolute, `..`, devices, fifos, unsafe symlinks and hard links, members
 * outside the roots or through an earlier symlink), oversized or malformed headers, and an archive without its end.
 * For the way into the pod, where bytes must not pass before they are checked, see createArchiveGate.
 */
export function createArchiveCheck(compression: CacheCompression, options: ArchiveCheckOptions = {}): ArchiveCheck {
  const checker = new ArchiveChecker(options);
  let archiveBytes = 0;
  let settled = false;
  let resolveDone!: (report: ArchiveCheckReport) => void;
  let rejectDone!: (error: CacheArchiveError) => void;
  const done = new Promise<ArchiveCheckReport>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  done.catch(() => undefined);
  let gunzip: Gunzip | undefined;

  /** Settles `done` on the first problem; true when there is one. */
  const settleOnProblem = (problem: CacheArchiveError | undefined): boolean => {
    if (problem === undefined) return false;
    if (!settled) {
      settled = true;
      gunzip?.destroy();
      rejectDone(problem);
    }
    return true;
  };
  const parse = (chunk: Buffer): void => void settleOnProblem(checker.push(chunk));
  const finish = (): void => {
    if (settleOnProblem(checker.finish()) || settled) return;
    settled = true;
    resolveDone({ entries: checker.entries, bytes: checker.bytes, archiveBytes });
  };

  if (compression === "gzip") {
    gunzip = createGunzip();
    gunzip.on("data", parse);
    gunzip.on("error", (error) => settleOnProblem(checker.fail(gzipError(error))));
  }
  const stream = new Writable({
    highWaterMark: 1024 * 1024,
    write(chunk: Buffer, _encoding, callback) {
      archiveBytes += chunk.length;
      if (checker.problem !== undefined) return callback();
      if (gunzip === undefined) {
        parse(chunk);
        return callback();
      }
      if (gunzip.write(chunk)) return callback();
      const onDone = (): void => {
        gunzip?.off("drain", onDone);
        gunzip?.off("close", onDone);
        callback();
      };
      gunzip.on("drain", onDone);
      gunzip.on("close", onDone);
    },
    final(callback) {
      if (checker.problem !== undefined || gunzip === undefined) {
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
      gunzip.once("end", end);
      gunzip.once("close", end);
      gunzip.end();
    },
    destroy(error, callback) {
      if (!settled) settleOnProblem(checker.fail(new CacheArchiveError(`the cache archive check was stopped before the archive's end${error ? `: ${error.message}` : ""}`)));
      callback(error);
    },
  });
  return { stream, done };
}
