// The synchronous core of the restore gate's check: tar members parsed from decompressed bytes, each judged by the policy.
import { TarFormatError } from "../transfer/tar-header.js";
import { TarParser } from "../transfer/tar-parser.js";
import { CacheMemberPolicy, readCacheRoots } from "./cache-member-policy.js";

/** A cache archive that must not be restored: hostile, corrupt or truncated. `member` names the entry when one is to blame. */
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
  /** Bytes of the archive as stored (compressed when gzip). */
  readonly archiveBytes: number;
}

/**
 * Fed the tar bytes (already decompressed) in order; returns the first problem, and the same one on every later
 * call. Bodies are skipped as they arrive: it holds a header's worth of bytes, or a meta header of at most 1 MiB.
 */
export class ArchiveChecker {
  entries = 0;
  bytes = 0;
  private failure: CacheArchiveError | undefined;
  private readonly parser = new TarParser();
  private readonly policy: CacheMemberPolicy;

  constructor(options: ArchiveCheckOptions) {
    this.policy = new CacheMemberPolicy(readCacheRoots(options.roots ?? ["/"]));
  }

  get problem(): CacheArchiveError | undefined {
    return this.failure;
  }

  /** Checks every member whose header is complete in what was pushed so far. */
  push(chunk: Buffer): CacheArchiveError | undefined {
    if (this.failure !== undefined) return this.failure;
    try {
      this.parser.push(chunk);
      for (;;) {
        if (this.parser.bodyRemaining > 0 && !this.parser.skipBody()) return undefined;
        const member = this.parser.nextMember();
        if (member === undefined || member === "end") return undefined;
        this.entries += 1;
        this.bytes += member.size;
        const reason = this.policy.check(member);
        if (reason !== undefined)
          return this.fail(
            new CacheArchiveError(
              `cache archive member ${JSON.stringify(member.name)} is refused: ${reason}`,
              member.name,
            ),
          );
      }
    } catch (error) {
      return this.fail(toArchiveError(error));
    }
  }

  /** At the end of the input: a problem when the archive was cut short (or had data after its end). */
  finish(): CacheArchiveError | undefined {
    if (this.failure !== undefined) return this.failure;
    try {
      const cut = this.parser.finish();
      return cut === undefined
        ? undefined
        : this.fail(new CacheArchiveError(`cache archive is truncated after ${this.entries} entries: ${cut.detail}`));
    } catch (error) {
      return this.fail(toArchiveError(error));
    }
  }

  /** Records a problem found outside the tar data (the gzip layer, the source); the first one stays. */
  fail(error: CacheArchiveError): CacheArchiveError {
    this.failure ??= error;
    return this.failure;
  }
}

function toArchiveError(error: unknown): CacheArchiveError {
  if (error instanceof TarFormatError)
    return new CacheArchiveError(`cache archive is not a valid tar archive: ${error.message}`);
  return new CacheArchiveError(
    `checking the cache archive failed: ${error instanceof Error ? error.message : String(error)}`,
  );
}

export function gzipError(error: Error): CacheArchiveError {
  return new CacheArchiveError(`cache archive is not valid gzip: ${error.message}`);
}

/** A decoder's error as the check reports it: the zstd decoder's are CacheArchiveErrors already, zlib's are gzip's. */
export function decoderError(error: Error): CacheArchiveError {
  return error instanceof CacheArchiveError ? error : gzipError(error);
}
