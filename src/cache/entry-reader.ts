// Streams one stored entry's archive back, checking its sha256 on the way; a damaged entry errors and is removed.
import { createHash } from "node:crypto";
import { open } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { Readable } from "node:stream";
import { CacheCorruptError } from "../workflow/cache-types.js";
import type { CacheEntry } from "../workflow/cache-types.js";
import { DamagedEntryError, readTrailer } from "./entry-file.js";
import { entryPath } from "./store-layout.js";

/** Bytes read from the file at a time (each read a fresh buffer: the consumer may keep it). */
const READ_BYTES = 1024 * 1024;

export interface EntryReadInput {
  readonly root: string;
  readonly entry: CacheEntry;
  readonly now: () => number;
  /** Removes a damaged entry (only the inode that was read) and reports it; awaited before the stream errors. */
  readonly removeDamaged: (path: string, ino: number, reason: string) => Promise<void>;
}

/**
 * The entry's archive bytes, in order. Errors with CacheCorruptError (after the entry was removed) when the file's
 * trailer is damaged, the file ends early, or the bytes do not hash to the trailer's sha256; the last piece is held
 * back until the digest matched, so the stream never ends successfully with bad bytes. Errors with a plain Error when
 * the entry is no longer in the store, or was replaced by another save of its key since `entry` was looked up. At
 * a successful end the file's mtime becomes now (lastUsedAt), on the very file read.
 */
export function openEntryRead(input: EntryReadInput): Readable {
  return new EntryReadStream(input);
}

class EntryReadStream extends Readable {
  private handle: FileHandle | undefined;
  private ino = 0;
  private position = 0;
  private size = 0;
  private ended = false;
  private readonly hash = createHash("sha256");
  private readonly path: string;

  constructor(private readonly input: EntryReadInput) {
    super({ highWaterMark: READ_BYTES });
    this.path = entryPath(input.root, input.entry.repo, input.entry.key);
  }

  override _construct(callback: (error?: Error | null) => void): void {
    this.openChecked().then(() => callback(), callback);
  }

  override _read(): void {
    this.readPiece().catch((error: Error) => this.destroy(error));
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const handle = this.handle;
    this.handle = undefined;
    if (handle === undefined) callback(error);
    else
      handle.close().then(
        () => callback(error),
        () => callback(error),
      );
  }

  private async openChecked(): Promise<void> {
    const { entry } = this.input;
    try {
      this.handle = await open(this.path, "r");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT")
        throw new Error(`cache ${JSON.stringify(entry.key)} is no longer in the store`, { cause: error });
      throw error;
    }
    const info = await this.handle.stat();
    this.ino = info.ino;
    let metadata;
    try {
      metadata = await readTrailer(this.handle, info.size);
    } catch (error) {
      if (error instanceof DamagedEntryError) throw await this.corrupt(error.message);
      throw error;
    }
    if (metadata.key !== entry.key || metadata.repo !== entry.repo)
      throw await this.corrupt("its trailer names another key");
    if (metadata.sha256 !== entry.sha256 || metadata.bytes !== entry.bytes) {
      throw new Error(`cache ${JSON.stringify(entry.key)} was replaced by another save since it was looked up`);
    }
    this.size = metadata.bytes;
  }

  private async readPiece(): Promise<void> {
    const handle = this.handle;
    if (handle === undefined) return;
    const left = this.size - this.position;
    if (left === 0) return this.finish(undefined);
    const piece = Buffer.allocUnsafe(Math.min(READ_BYTES, left));
    const { bytesRead } = await handle.read(piece, 0, piece.length, this.position);
    if (bytesRead === 0)
      throw await this.corrupt(`it ends after ${this.position} of its ${this.size} bytes (truncated)`);
    const data = piece.subarray(0, bytesRead);
    this.position += bytesRead;
    this.hash.update(data);
    if (this.position < this.size) this.push(data);
    else await this.finish(data);
  }

  /** Checks the digest before the last piece goes out, marks the entry used, ends the stream. */
  private async finish(last: Buffer | undefined): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    const digest = this.hash.digest("hex");
    if (digest !== this.input.entry.sha256)
      throw await this.corrupt(
        `its bytes hash to sha256 ${digest}, not the ${this.input.entry.sha256} it was saved with`,
      );
    const now = new Date(this.input.now());
    await this.handle?.utimes(now, now).catch(() => undefined);
    if (last !== undefined) this.push(last);
    this.push(null);
  }

  private async corrupt(reason: string): Promise<CacheCorruptError> {
    const message = `cache ${JSON.stringify(this.input.entry.key)} of ${JSON.stringify(this.input.entry.repo)} is corrupt: ${reason}; it was removed`;
    await this.input.removeDamaged(this.path, this.ino, reason).catch(() => undefined);
    return new CacheCorruptError(message);
  }
}
