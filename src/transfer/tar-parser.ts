// Splits a tar stream, pushed in chunks of any size, into members and their bodies: synchronous, bodies not copied.
import {
  BLOCK_SIZE,
  TarFormatError,
  decodeHeaderBlock,
  hasData,
  isZeroBlock,
  sparseExtensionContinues,
} from "./tar-header.js";
import type { TarHeaderBlock } from "./tar-header.js";
import { decodeLongName, parsePaxRecords, readPaxOverrides } from "./tar-meta.js";
import type { PaxOverrides } from "./tar-meta.js";

/** One archive member with its meta headers (PAX 'x', GNU 'L' and 'K') applied. */
export interface TarMember {
  /** PAX path, else GNU long name, else the header's (ustar prefix included). */
  readonly name: string;
  /** PAX linkpath, else GNU long link name, else the header's ("" when none). */
  readonly linkname: string;
  /** See TarHeaderBlock.type; a sparse file stored the PAX way is "gnu-sparse" too. */
  readonly type: string;
  readonly mode: number;
  /** Seconds since the epoch, possibly fractional (PAX). */
  readonly mtime: number;
  /** Body bytes stored after the header: 0 for types without data whatever their size field says. */
  readonly size: number;
}

/** Where a stream that ended before its end-of-archive block was cut. */
export interface TarTruncation {
  readonly detail: string;
  /** True when the stream was cut inside a member or a header, false when it just lacks its end block. */
  readonly inside: boolean;
}

/** Longest body accepted for a PAX or GNU long-name header (they are buffered whole). */
export const MAX_META_BYTES = 1024 * 1024;
/** Most meta headers accepted in a row before a member (GNU tar writes at most three). */
export const MAX_META_HEADERS = 16;
/** Most bytes accepted after the end-of-archive block (tar pads its last record with zeros: 10 KiB by default, 64 KiB as pack-outputs asks). */
export const MAX_TRAILER_BYTES = 1024 * 1024;

const EMPTY = Buffer.alloc(0);
/** Chunks smaller than this are copied into a staging buffer of STAGING_BYTES rather than queued as they are. */
const COALESCE_BELOW = 4096;
const STAGING_BYTES = 64 * 1024;

interface PendingMeta {
  readonly type: string;
  readonly size: number;
}

/**
 * Push parser for a tar stream. Feed it with push(); between members call nextMember(), then consume the
 * member's body (exactly `size` bytes) with takeBody, readBody or skipBody before the next nextMember().
 * Nothing is read ahead of what the caller asks for, so a caller that stops asking reads no further.
 *
 * The archive ends at its first all-zero block (like GNU tar; the second one and the record padding
 * after it must be zeros too, at most MAX_TRAILER_BYTES of them). A header with a bad checksum, a
 * malformed number or PAX record, an oversized meta header, or data other than zeros after the end throw
 * TarFormatError. Global PAX headers ('g') are read and ignored. An old GNU sparse header's extension
 * blocks are skipped with it, so its body is exactly its size field.
 *
 * With `concatenated`, zero blocks do not end the stream (GNU tar's --ignore-zeros): it may be several archives one
 * after the other, as `xargs tar -c` writes when its list of names is long; it is complete when it ends on zero
 * blocks, at most MAX_TRAILER_BYTES of them in a row.
 */
export class TarParser {
  /** Told of each chunk pushed once nothing the parser returned refers to it any more; see the constructor. */
  private readonly release: ((chunk: Buffer) => void) | undefined;
  /** Chunks pushed as they are (not staged), to be given to `release` once consumed. */
  private readonly held = new WeakSet<Buffer>();
  /** Consumed chunks not released yet: the caller may still use a body view of them until its next call. */
  private retired: Buffer[] = [];
  /** Input not consumed yet: chunks[first..], read from offset `head` of chunks[first]. */
  private chunks: Buffer[] = [];
  private first = 0;
  private head = 0;
  /** Where small chunks are gathered; when stagingIsLast, the last queued chunk is staging[stagingStart, stagingEnd). */
  private staging = EMPTY;
  private stagingStart = 0;
  private stagingEnd = 0;
  private stagingIsLast = false;
  private bufferedBytes = 0;
  private receivedBytes = 0;
  private consumedBytes = 0;
  /** Padding (or ignored data) to drop before the next header. */
  private skip = 0;
  private bodyLeft = 0;
  private padAfterBody = 0;
  private currentName = "";
  private pendingMeta: PendingMeta | undefined;
  private metaHeaders = 0;
  private longName: string | undefined;
  private longLinkName: string | undefined;
  private pax: PaxOverrides | undefined;
  private sparseHeader: TarHeaderBlock | undefined;
  private ended = false;
  private trailerBytes = 0;
  private readonly concatenated: boolean;
  /** With `concatenated`: the zero bytes read since the last header; the stream may end here when there are any. */
  private zeroRun = 0;
  private readonly scratch = Buffer.alloc(BLOCK_SIZE);

  /**
   * With `release`, each chunk pushed is handed back once the parser no longer needs it, so that its memory
   * can be reused: a chunk that is copied into the staging buffer right away, a chunk queued as it is at the
   * first call after the parser consumed its last byte. A body view from takeBody or readBody therefore stays
   * valid until the next call on the parser, no longer. Chunks still queued when the caller stops are not released.
   */
  constructor(options: { readonly release?: (chunk: Buffer) => void; readonly concatenated?: boolean } = {}) {
    this.release = options.release;
    this.concatenated = options.concatenated ?? false;
  }

  /** Bytes pushed and not consumed yet. */
  get buffered(): number {
    return this.bufferedBytes;
  }

  /** Bytes of the current member's body not read yet. */
  get bodyRemaining(): number {
    return this.bodyLeft;
  }

  /**
   * Queues `chunk` (kept by reference, never modified). Chunks under COALESCE_BELOW bytes are copied into
   * a staging buffer instead, so a source that trickles bytes cannot make us hold millions of tiny buffers.
   */
  push(chunk: Buffer): void {
    this.releaseRetired();
    if (chunk.length === 0) {
      this.release?.(chunk);
      return;
    }
    this.bufferedBytes += chunk.length;
    this.receivedBytes += chunk.length;
    if (chunk.length >= COALESCE_BELOW) {
      this.chunks.push(chunk);
      if (this.release !== undefined) this.held.add(chunk);
      this.stagingIsLast = false;
      return;
    }
    if (!this.stagingIsLast || this.stagingEnd + chunk.length > this.staging.length) {
      if (this.stagingEnd + chunk.length > this.staging.length) {
        this.staging = Buffer.allocUnsafe(STAGING_BYTES);
        this.stagingEnd = 0;
      }
      // A new queued chunk: a view of the staging buffer from here on.
      this.stagingStart = this.stagingEnd;
      this.chunks.push(EMPTY);
      this.stagingIsLast = true;
    }
    // Bytes already queued in the staging buffer (and views of them handed out) are never overwritten.
    chunk.copy(this.staging, this.stagingEnd);
    this.stagingEnd += chunk.length;
    this.chunks[this.chunks.length - 1] = this.staging.subarray(this.stagingStart, this.stagingEnd);
    this.release?.(chunk);
  }

  /**
   * The next member, "end" once the end-of-archive block was read (again on every later call, after
   * checking and dropping what came since), or undefined when more input is needed. Throws TarFormatError.
   */
  nextMember(): TarMember | "end" | undefined {
    this.releaseRetired();
    if (this.bodyLeft > 0) throw new Error("nextMember called before the current body was consumed");
    for (;;) {
      if (this.ended) {
        this.dropTrailer();
        return "end";
      }
      if (this.skip > 0) {
        const skipped = Math.min(this.skip, this.bufferedBytes);
        this.consume(skipped);
        this.skip -= skipped;
        if (this.skip > 0) return undefined;
      }
      if (this.pendingMeta !== undefined) {
        if (this.bufferedBytes < this.pendingMeta.size) return undefined;
        this.readMeta(this.pendingMeta);
        continue;
      }
      if (this.bufferedBytes < BLOCK_SIZE) return undefined;
      if (this.sparseHeader !== undefined) {
        // An old GNU sparse map extension block; its last byte says whether another one follows.
        const { block, offset } = this.peekBlock();
        const continues = sparseExtensionContinues(block, offset);
        this.consume(BLOCK_SIZE);
        if (continues) continue;
        const header = this.sparseHeader;
        this.sparseHeader = undefined;
        return this.startMember(header);
      }
      const { block, offset } = this.peekBlock();
      if (isZeroBlock(block, offset)) {
        if (this.pax !== undefined || this.longName !== undefined || this.longLinkName !== undefined) {
          throw this.formatError("an extended header is not followed by an entry");
        }
        this.consume(BLOCK_SIZE);
        if (!this.concatenated) this.ended = true;
        else if ((this.zeroRun += BLOCK_SIZE) > MAX_TRAILER_BYTES)
          throw this.formatError(`more than ${MAX_TRAILER_BYTES} zero bytes in a row`);
        continue;
      }
      const header = this.decodeAt(block, offset);
      this.consume(BLOCK_SIZE);
      this.zeroRun = 0;
      if (isMetaType(header.type)) {
        this.metaHeaders += 1;
        if (this.metaHeaders > MAX_META_HEADERS)
          throw this.formatError(`more than ${MAX_META_HEADERS} extended headers in a row`);
        if (header.size > MAX_META_BYTES)
          throw this.formatError(
            `a ${header.type} header of ${header.size} bytes (at most ${MAX_META_BYTES} accepted)`,
          );
        this.pendingMeta = { type: header.type, size: header.size };
        continue;
      }
      if (header.sparseExtended) {
        this.sparseHeader = header;
        continue;
      }
      return this.startMember(header);
    }
  }

  /**
   * The whole rest of the current body if it is all buffered, else undefined: a view of the input when it
   * sits in one chunk, else copied into `scratch` (which must be large enough) and a view of that.
   */
  takeBody(scratch: Buffer): Buffer | undefined {
    this.releaseRetired();
    const size = this.bodyLeft;
    if (this.bufferedBytes < size) return undefined;
    let body: Buffer;
    const first = this.chunks[this.first];
    if (first !== undefined && first.length - this.head >= size) {
      body = first.subarray(this.head, this.head + size);
      this.consume(size);
    } else {
      if (scratch.length < size)
        throw new RangeError(
          `tar parser: a body of ${size} bytes does not fit a ${scratch.length}-byte scratch buffer`,
        );
      let filled = 0;
      while (filled < size) {
        const piece = this.slice(size - filled);
        piece.copy(scratch, filled);
        filled += piece.length;
      }
      body = scratch.subarray(0, size);
    }
    this.bodyLeft = 0;
    this.finishBody();
    return body;
  }

  /** The next buffered piece of the current body, or undefined when none is buffered or the body is done. */
  readBody(): Buffer | undefined {
    this.releaseRetired();
    if (this.bodyLeft === 0 || this.bufferedBytes === 0) return undefined;
    const piece = this.takePiece();
    if (this.bodyLeft === 0) this.finishBody();
    return piece;
  }

  /** Drops as much of the current body as is buffered; true once all of it is gone. */
  skipBody(): boolean {
    this.releaseRetired();
    const skipped = Math.min(this.bodyLeft, this.bufferedBytes);
    this.consume(skipped);
    this.bodyLeft -= skipped;
    if (this.bodyLeft > 0) return false;
    this.finishBody();
    return true;
  }

  /**
   * To call when the input ended: undefined if the archive was complete (its end-of-archive block was
   * read, and nothing but zeros after it), else where it was cut. Throws TarFormatError for a bad trailer.
   */
  finish(): TarTruncation | undefined {
    this.releaseRetired();
    if (this.ended || (this.zeroRun > 0 && this.bufferedBytes < BLOCK_SIZE)) {
      this.dropTrailer();
      return undefined;
    }
    if (this.receivedBytes === 0) return { detail: "it is empty", inside: false };
    if (this.bodyLeft > 0)
      return { detail: `it ends inside the content of ${JSON.stringify(this.currentName)}`, inside: true };
    if (this.skip > this.bufferedBytes)
      return { detail: `it ends inside the padding after ${JSON.stringify(this.currentName)}`, inside: true };
    if (this.pendingMeta !== undefined)
      return { detail: `it ends inside a ${this.pendingMeta.type} header`, inside: true };
    if (this.sparseHeader !== undefined) return { detail: "it ends inside a sparse file's map", inside: true };
    if (this.bufferedBytes - this.skip > 0) return { detail: "it ends inside a header block", inside: true };
    return { detail: "it ends without an end-of-archive block", inside: false };
  }

  private startMember(header: TarHeaderBlock): TarMember {
    const pax = this.pax;
    const size = hasData(header.type) ? (pax?.size ?? header.size) : 0;
    const member: TarMember = {
      name: pax?.path ?? this.longName ?? header.name,
      linkname: pax?.linkpath ?? this.longLinkName ?? header.linkname,
      type: pax?.sparse === true ? "gnu-sparse" : header.type,
      mode: header.mode,
      mtime: pax?.mtime ?? header.mtime,
      size,
    };
    this.pax = undefined;
    this.longName = undefined;
    this.longLinkName = undefined;
    this.metaHeaders = 0;
    this.currentName = member.name;
    this.bodyLeft = size;
    this.padAfterBody = paddingOf(size);
    return member;
  }

  private readMeta(meta: PendingMeta): void {
    const body = this.takeBytes(meta.size);
    this.pendingMeta = undefined;
    this.skip = paddingOf(meta.size);
    try {
      if (meta.type === "pax-header") this.pax = readPaxOverrides(parsePaxRecords(body));
      else if (meta.type === "gnu-long-path") this.longName = decodeLongName(body);
      else if (meta.type === "gnu-long-link-path") this.longLinkName = decodeLongName(body);
      // pax-global-header: its defaults (uid, uname, comment...) do not concern what we write.
    } catch (error) {
      throw this.located(error);
    }
  }

  private finishBody(): void {
    this.skip += this.padAfterBody;
    this.padAfterBody = 0;
  }

  private dropTrailer(): void {
    for (let index = this.first; index < this.chunks.length; index += 1) {
      const chunk = this.chunks[index] ?? EMPTY;
      for (let at = index === this.first ? this.head : 0; at < chunk.length; at += 1) {
        if (chunk[at] !== 0) throw this.formatError("data after the end-of-archive block");
      }
    }
    this.trailerBytes += this.bufferedBytes;
    if (this.trailerBytes > MAX_TRAILER_BYTES)
      throw this.formatError(`more than ${MAX_TRAILER_BYTES} bytes after the end-of-archive block`);
    this.consume(this.bufferedBytes);
  }

  private decodeAt(block: Buffer, offset: number): TarHeaderBlock {
    try {
      return decodeHeaderBlock(block, offset);
    } catch (error) {
      throw this.located(error);
    }
  }

  /** The next 512 bytes, in place when they sit in one chunk, else copied into the scratch block. */
  private peekBlock(): { readonly block: Buffer; readonly offset: number } {
    const first = this.chunks[this.first] ?? this.scratch;
    if (first.length - this.head >= BLOCK_SIZE) return { block: first, offset: this.head };
    let filled = 0;
    let at = this.head;
    for (let index = this.first; index < this.chunks.length; index += 1) {
      const chunk = this.chunks[index] ?? EMPTY;
      const copied = chunk.copy(this.scratch, filled, at, Math.min(chunk.length, at + BLOCK_SIZE - filled));
      filled += copied;
      at = 0;
      if (filled === BLOCK_SIZE) break;
    }
    return { block: this.scratch, offset: 0 };
  }

  /** Takes `size` buffered bytes as one buffer (copied when they span chunks). */
  private takeBytes(size: number): Buffer {
    const pieces: Buffer[] = [];
    let left = size;
    while (left > 0) {
      const piece = this.slice(left);
      pieces.push(piece);
      left -= piece.length;
    }
    return pieces.length === 1 ? (pieces[0] ?? Buffer.alloc(0)) : Buffer.concat(pieces, size);
  }

  private takePiece(): Buffer {
    const piece = this.slice(this.bodyLeft);
    this.bodyLeft -= piece.length;
    return piece;
  }

  /** Up to `max` bytes from the first chunk, consumed. */
  private slice(max: number): Buffer {
    const first = this.chunks[this.first];
    if (first === undefined) throw new Error("tar parser: slice past the buffered input");
    const end = Math.min(first.length, this.head + max);
    const piece = first.subarray(this.head, end);
    this.consume(end - this.head);
    return piece;
  }

  private consume(size: number): void {
    this.bufferedBytes -= size;
    this.consumedBytes += size;
    let left = size;
    while (left > 0) {
      const first = this.chunks[this.first];
      if (first === undefined) throw new Error("tar parser: consumed past the buffered input");
      const available = first.length - this.head;
      if (left < available) {
        this.head += left;
        return;
      }
      left -= available;
      this.dropFirstChunk();
    }
  }

  /** Forgets the first chunk in O(1) (amortised): many tiny chunks may be queued behind one body. */
  private dropFirstChunk(): void {
    const dropped = this.chunks[this.first];
    if (dropped !== undefined && this.held.has(dropped)) this.retired.push(dropped);
    this.chunks[this.first] = EMPTY;
    this.first += 1;
    this.head = 0;
    if (this.first === this.chunks.length) {
      this.chunks = [];
      this.first = 0;
      this.stagingIsLast = false;
    } else if (this.first >= 1024 && this.first * 2 >= this.chunks.length) {
      this.chunks = this.chunks.slice(this.first);
      this.first = 0;
    }
  }

  private releaseRetired(): void {
    if (this.retired.length === 0) return;
    const retired = this.retired;
    this.retired = [];
    for (const chunk of retired) {
      this.held.delete(chunk);
      this.release?.(chunk);
    }
  }

  private formatError(message: string): TarFormatError {
    return new TarFormatError(`Invalid tar archive: ${message} (at byte ${this.consumedBytes})`);
  }

  private located(error: unknown): unknown {
    if (!(error instanceof TarFormatError)) return error;
    return new TarFormatError(`${error.message} (block at byte ${this.consumedBytes})`);
  }
}

function isMetaType(type: string): boolean {
  return (
    type === "pax-header" || type === "pax-global-header" || type === "gnu-long-path" || type === "gnu-long-link-path"
  );
}

function paddingOf(size: number): number {
  const partial = size % BLOCK_SIZE;
  return partial === 0 ? 0 : BLOCK_SIZE - partial;
}
