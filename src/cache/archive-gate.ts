// Passes a cache archive on only once it was checked: for the way into the pod, so hostile members never reach its tar.
import { Transform } from "node:stream";
import { constants, createGunzip } from "node:zlib";
import type { CacheCompression } from "./cache-types.js";
import { ArchiveChecker, CacheArchiveError, gzipError } from "./archive-checker.js";
import type { ArchiveCheckOptions, ArchiveCheckReport } from "./archive-checker.js";

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

/**
 * The same rules as createArchiveCheck, as a gate rather than a tap. gzip is inflated with Z_SYNC_FLUSH on every
 * write, and a chunk is let through only once gunzip returned all the output its bytes decode to and that output
 * was parsed: the pod, holding only bytes the gate let through, can decode nothing the gate has not checked. The last
 * chunk is held back until the archive's end was seen, so a truncated archive never reaches the pod whole.
 */
export function createArchiveGate(compression: CacheCompression, options: ArchiveCheckOptions = {}): ArchiveGate {
  const checker = new ArchiveChecker(options);
  const gunzip = compression === "gzip" ? createGunzip({ flush: constants.Z_SYNC_FLUSH }) : undefined;
  let archiveBytes = 0;
  let held: Buffer | undefined;
  let settled = false;
  let resolveDone!: (report: ArchiveCheckReport) => void;
  let rejectDone!: (error: Error) => void;
  const done = new Promise<ArchiveCheckReport>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  done.catch(() => undefined);

  const drainGunzip = (): void => {
    if (gunzip === undefined) return;
    for (let out = gunzip.read() as Buffer | null; out !== null; out = gunzip.read() as Buffer | null) checker.push(out);
  };
  gunzip?.on("readable", drainGunzip);
  gunzip?.on("error", (error) => checker.fail(gzipError(error)));

  const stream = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      archiveBytes += chunk.length;
      const passOn = (): void => {
        const problem = checker.problem;
        if (problem !== undefined) return callback(problem);
        const previous = held;
        held = chunk;
        callback(null, previous);
      };
      if (gunzip === undefined) {
        checker.push(chunk);
        return passOn();
      }
      gunzip.write(chunk, (error) => {
        if (error) checker.fail(gzipError(error));
        drainGunzip();
        passOn();
      });
    },
    flush(callback) {
      const end = (): void => {
        const problem = checker.finish();
        if (problem !== undefined) return callback(problem);
        settled = true;
        resolveDone({ entries: checker.entries, bytes: checker.bytes, archiveBytes });
        callback(null, held);
      };
      if (gunzip === undefined || checker.problem !== undefined) return end();
      let called = false;
      const once = (): void => {
        if (called) return;
        called = true;
        end();
      };
      gunzip.once("end", once);
      gunzip.once("error", once);
      gunzip.end();
      // 'end' comes once the output is read to its end.
      drainGunzip();
    },
  });
  const stop = (error: Error): void => {
    gunzip?.destroy();
    if (settled) return;
    settled = true;
    rejectDone(error instanceof CacheArchiveError ? error : new CacheArchiveError(`the cache archive gate was stopped before the archive's end: ${error.message}`));
  };
  stream.on("error", stop);
  stream.on("close", () => stop(new Error("the stream was closed")));
  return { stream, done };
}
