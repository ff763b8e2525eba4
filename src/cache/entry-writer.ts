// One save into the host directory store: streams the archive into a temp file, then links it into place atomically.
import { createHash } from "node:crypto";
import { link, open, unlink } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { Writable, finished } from "node:stream";
import type { CacheCompression, CacheWriter } from "../workflow/cache-types.js";
import { encodeTrailer } from "./entry-file.js";
import { ensureStoreDir } from "./store-dirs.js";
import { entryPath, newTempPath, repoDir } from "./store-layout.js";

export interface EntrySaveInput {
  readonly root: string;
  readonly repo: string;
  readonly key: string;
  readonly compression: CacheCompression;
  /** An archive of more bytes is not kept: its bytes past the limit are dropped unwritten and commit rejects. */
  readonly maxBytes: number;
  readonly now: () => number;
  /** Runs after this save linked its entry at `path` (the store's eviction); what it throws does not fail the save. */
  readonly afterSave: (path: string) => Promise<void>;
}

/**
 * Opens a fresh temp file (O_EXCL, mode 0600) and returns the writer. commit() ends the stream if the caller did not,
 * appends the trailer, sets the mtime (lastUsedAt) to now, and link(2)s the temp file to the entry's name: the link
 * either makes the complete entry visible at once or fails with EEXIST because another run, in this process or
 * another, saved the key first ("exists": this one's bytes are removed, the store is unchanged). Never check-then-write.
 */
export async function startEntrySave(input: EntrySaveInput): Promise<CacheWriter> {
  const tempPath = newTempPath(input.root);
  const handle = await open(tempPath, "wx", 0o600);
  const stream = new EntryStream(handle, input.maxBytes);
  let committing: Promise<"saved" | "exists"> | undefined;
  let aborting: Promise<void> | undefined;
  let closed = false;
  const closeHandle = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await handle.close();
  };
  const discard = async (): Promise<void> => {
    if (!stream.destroyed) stream.destroy();
    await closeHandle().catch(() => undefined);
    await unlink(tempPath).catch(ignoreMissing);
  };
  const commit = async (compression: CacheCompression): Promise<"saved" | "exists"> => {
    if (aborting !== undefined) throw new Error("the cache save was aborted before its commit");
    try {
      if (!stream.writableEnded) stream.end();
      await new Promise<void>((resolve, reject) => finished(stream, (error) => (error ? reject(error) : resolve())));
      if (stream.oversized)
        throw new Error(
          `the cache archive is ${stream.bytes} bytes, more than the store's limit of ${input.maxBytes} bytes: not kept`,
        );
      const trailer = encodeTrailer({
        repo: input.repo,
        key: input.key,
        bytes: stream.bytes,
        sha256: stream.digest(),
        compression,
        createdAt: input.now(),
      });
      await writeAll(handle, [trailer], stream.bytes);
      const now = new Date(input.now());
      await handle.utimes(now, now);
      await closeHandle();
      ensureStoreDir(repoDir(input.root, input.repo));
      const finalPath = entryPath(input.root, input.repo, input.key);
      try {
        await link(tempPath, finalPath);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EEXIST") return "exists";
        throw new Error(
          `linking the saved cache into place failed (the cache directory must be on a file system with hard links): ${(error as Error).message}`,
          { cause: error },
        );
      }
      await unlink(tempPath).catch(ignoreMissing);
      await input.afterSave(finalPath).catch(() => undefined);
      return "saved";
    } finally {
      await discard();
    }
  };
  return {
    stream,
    commit: (compression) => (committing ??= commit(compression ?? input.compression)),
    abort: () => {
      if (committing !== undefined)
        return committing.then(
          () => undefined,
          () => undefined,
        );
      return (aborting ??= discard());
    },
  };
}

/**
 * Bytes gathered before they go to the file in one writev: kubectl's stdout comes in pieces of ~26 KiB, and a write
 * per piece (a promise and a thread-pool round trip each) cost ~1 s of CPU per 300 MB; the gathered bytes are at most
 * this much, so memory stays bounded.
 */
export const ENTRY_WRITE_BATCH_BYTES = 1024 * 1024;

/** Writes what it is given to the temp file, hashing it; past maxBytes it drops the rest (and frees what it wrote). */
class EntryStream extends Writable {
  bytes = 0;
  oversized = false;
  private readonly hash = createHash("sha256");
  /** Taken but not yet written: less than ENTRY_WRITE_BATCH_BYTES; written at the next full batch or at the end. */
  private gathered: Buffer[] = [];
  private gatheredBytes = 0;
  private written = 0;

  constructor(
    private readonly handle: FileHandle,
    private readonly maxBytes: number,
  ) {
    super({ highWaterMark: ENTRY_WRITE_BATCH_BYTES });
  }

  digest(): string {
    return this.hash.digest("hex");
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, callback: (error?: Error | null) => void): void {
    const buffers = chunks.map(({ chunk }) => chunk);
    const size = buffers.reduce((sum, buffer) => sum + buffer.length, 0);
    if (this.oversized || this.bytes + size > this.maxBytes) {
      const first = !this.oversized;
      this.oversized = true;
      this.bytes += size;
      this.gathered = [];
      this.gatheredBytes = 0;
      if (first) this.handle.truncate(0).then(() => callback(), callback);
      else callback();
      return;
    }
    this.bytes += size;
    for (const buffer of buffers) this.hash.update(buffer);
    this.gathered.push(...buffers);
    this.gatheredBytes += size;
    if (this.gatheredBytes < ENTRY_WRITE_BATCH_BYTES) return callback();
    this.flushGathered().then(() => callback(), callback);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this._writev([{ chunk }], callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (this.oversized) return callback();
    this.flushGathered().then(() => callback(), callback);
  }

  private async flushGathered(): Promise<void> {
    // Many small pieces are joined first (one copy of at most a batch): writev takes at most IOV_MAX at a time.
    const buffers = this.gathered.length > 64 ? [Buffer.concat(this.gathered, this.gatheredBytes)] : this.gathered;
    const at = this.written;
    this.written += this.gatheredBytes;
    this.gathered = [];
    this.gatheredBytes = 0;
    await writeAll(this.handle, buffers, at);
  }
}

/** Writes every buffer at `position` onwards, going on after a short write. */
async function writeAll(handle: FileHandle, buffers: Buffer[], position: number): Promise<void> {
  const pending = buffers.filter((buffer) => buffer.length > 0);
  let at = position;
  while (pending.length > 0) {
    const { bytesWritten } = await handle.writev(pending, at);
    at += bytesWritten;
    let left = bytesWritten;
    while (pending.length > 0 && left >= pending[0]!.length) left -= pending.shift()!.length;
    if (left > 0) pending[0] = pending[0]!.subarray(left);
  }
}

function ignoreMissing(error: unknown): void {
  if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
}
