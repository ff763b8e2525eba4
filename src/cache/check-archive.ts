// Checks a cache archive as it streams (hostile input: an earlier run's untrusted code made it): gunzip, tar, policy.
import { Writable } from "node:stream";
import { createGunzip } from "node:zlib";
import type { Gunzip } from "node:zlib";
import { TarFormatError } from "../transfer/tar-header.js";
import { TarParser } from "../transfer/tar-parser.js";
import type { CacheCompression } from "./cache-types.js";
import { CacheMemberPolicy, readCacheRoots } from "./cache-member-policy.js";

/** A cache archive that must not be saved or restored: hostile, corrupt or truncated. `member` names the entry when one is to blame. */
export class CacheArchiveError extends Error {
  override readonly name = "CacheArchiveError";
  constructor(
    message: string,
    readonly member?: string,
  ) {
    super(message);
  }
}

export interface ArchiveCheckOptions {
  /**
   * The cache's paths in the pod (absolute: `/work/node_modules`); members must lie at or under one. Default `["/"]`:
   * anywhere in the pod, only the path rules then apply. Pass the CacheSpec's paths.
   */
  readonly roots?: readonly string[];
}

export interface ArchiveCheckReport {
  /** Archive members (meta headers not counted). */
  readonly entries: number;
  /** Content bytes of the members (the uncompressed file data). */
  readonly bytes: number;
  /** Bytes written into the check (as stored: compressed when gzip). */
  readonly archiveBytes: number;
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
  readonly done: Promise<ArchiveCheckReport>;
}

/**
 * A streaming check: gzip is decompressed with node:zlib and the tar parsed with the project's own push parser
 * (src/transfer/tar-parser.ts); bodies are skipped as they arrive, so memory stays at a few chunks whatever the size.
 * Refused: what CacheMemberPolicy refuses (absolute, `..`, devices, fifos, unsafe symlinks and hard links, members
 * outside the roots or through an earlier symlink), oversized or malformed headers, and an archive without its end.
 */
export function createArchiveCheck(compression: CacheCompression, options: ArchiveCheckOptions = {}): ArchiveCheck {
  const policy = new CacheMemberPolicy(readCacheRoots(options.roots ?? ["/"]));
  const parser = new TarParser();
  let entries = 0;
  let bytes = 0;
  let archiveBytes = 0;
  let failed = false;
  let settled = false;
  let resolveDone!: (report: ArchiveCheckReport) => void;
  let rejectDone!: (error: CacheArchiveError) => void;
  const done = new Promise<ArchiveCheckReport>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  done.catch(() => undefined);
  let gunzip: Gunzip | undefined;

  const fail = (error: CacheArchiveError): void => {
    if (failed || settled) return;
    failed = true;
    settled = true;
    gunzip?.destroy();
    rejectDone(error);
  };
  /** Parses what is buffered: each member checked, its body skipped. */
  const parse = (chunk: Buffer): void => {
    if (failed) return;
    try {
      parser.push(chunk);
      for (;;) {
        if (parser.bodyRemaining > 0 && !parser.skipBody()) return;
        const member = parser.nextMember();
        if (member === undefined || member === "end") return;
        entries += 1;
        bytes += member.size;
        const reason = policy.check(member);
        if (reason !== undefined) return fail(new CacheArchiveError(`cache archive member ${JSON.stringify(member.name)} is refused: ${reason}`, member.name));
      }
    } catch (error) {
      fail(toArchiveError(error));
    }
  };
  const finish = (): void => {
    if (failed) return;
    try {
      const cut = parser.finish();
      if (cut !== undefined) return fail(new CacheArchiveError(`cache archive is truncated after ${entries} entries: ${cut.detail}`));
      settled = true;
      resolveDone({ entries, bytes, archiveBytes });
    } catch (error) {
      fail(toArchiveError(error));
    }
  };

  if (compression === "gzip") {
    gunzip = createGunzip();
    gunzip.on("data", parse);
    gunzip.on("error", (error) => fail(new CacheArchiveError(`cache archive is not valid gzip: ${error.message}`)));
  }
  const stream = new Writable({
    highWaterMark: 1024 * 1024,
    write(chunk: Buffer, _encoding, callback) {
      archiveBytes += chunk.length;
      if (failed) return callback();
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
      if (failed || gunzip === undefined) {
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
      fail(new CacheArchiveError(`the cache archive check was stopped before the archive's end${error ? `: ${error.message}` : ""}`));
      callback(error);
    },
  });
  return { stream, done };
}

function toArchiveError(error: unknown): CacheArchiveError {
  if (error instanceof TarFormatError) return new CacheArchiveError(`cache archive is not a valid tar archive: ${error.message}`);
  return new CacheArchiveError(`checking the cache archive failed: ${error instanceof Error ? error.message : String(error)}`);
}
