// Walks a zstd stream's frame and block headers as bytes arrive, refusing what a cache archive must not hold before a decoder sees it.
//
// fzstd allocates a frame's whole window when it reads the frame header (up to 2 GiB) and copies it on every block,
// so an untrusted archive's window is bounded here first. The walk also tells the gate where the last complete block
// ends: the pod's zstd may emit a raw block's bytes before the block is whole, while fzstd waits for the whole block.
import { CacheArchiveError } from "./archive-checker.js";

/** The largest window (or single-segment content size) accepted: `zstd -1` writes 512 KiB, `--long` 128 MiB. */
export const MAX_ZSTD_WINDOW_BYTES = 128 * 1024 * 1024;
/** The zstd format's largest block (Block_Maximum_Size). */
const MAX_BLOCK_BYTES = 128 * 1024;

const ZSTD_MAGIC = 0xfd2fb528;

type State =
  | { readonly kind: "magic" }
  | { readonly kind: "header"; readonly need: number }
  | { readonly kind: "skip-size" }
  | { readonly kind: "skip"; left: number }
  | { readonly kind: "block-header" }
  | { readonly kind: "block"; left: number; readonly last: boolean }
  | { readonly kind: "checksum" };

function refuse(detail: string): CacheArchiveError {
  return new CacheArchiveError(`cache archive is not valid zstd: ${detail}`);
}

/** The length of a frame header from its descriptor byte (the byte after the magic), the descriptor included. */
function headerLength(descriptor: number): number {
  const singleSegment = (descriptor >> 5) & 1;
  const dictBytes = [0, 1, 2, 4][descriptor & 3]!;
  const contentFlag = descriptor >> 6;
  const contentBytes = contentFlag === 0 ? singleSegment : 1 << contentFlag;
  return 1 + (singleSegment ? 0 : 1) + dictBytes + contentBytes;
}

export class ZstdFrameScanner {
  /** Input bytes up to the end of the last complete frame header, block or checksum: what the pod may decode. */
  safeBytes = 0;
  private seen = 0;
  private frames = 0;
  private state: State = { kind: "magic" };
  private checksum = false;
  /** A header field being gathered across chunks. */
  private field: number[] = [];

  /** Walks `chunk`; throws CacheArchiveError for a frame the archive must not hold. */
  push(chunk: Uint8Array): void {
    let at = 0;
    while (at < chunk.length) at = this.walk(chunk, at);
  }

  /**
   * Walks `chunk` from `from` up to the end of the next block (a block decodes to at most 128 KiB, however few bytes
   * it takes: a decoder fed up to here yields a bounded amount), or to the chunk's end; returns where it stopped.
   */
  walk(chunk: Uint8Array, from: number): number {
    let at = from;
    while (at < chunk.length) {
      const state = this.state;
      if (state.kind === "skip" || state.kind === "block") {
        const take = Math.min(state.left, chunk.length - at);
        state.left -= take;
        at += take;
        if (state.left === 0) {
          this.endOf(state, this.seen + at);
          if (state.kind === "block") break;
        }
        continue;
      }
      const want = this.fieldLength();
      const take = Math.min(want - this.field.length, chunk.length - at);
      for (let i = 0; i < take; i++) this.field.push(chunk[at + i]!);
      at += take;
      if (this.field.length < want) continue;
      if (state.kind === "header" && this.field.length === 1 && state.need === 0) {
        // The descriptor alone tells how long the rest of the header is.
        this.state = { kind: "header", need: headerLength(this.field[0]!) };
        continue;
      }
      const field = this.field;
      this.field = [];
      this.readField(field, this.seen + at);
      // An RLE block's one byte or an empty block, complete with its header.
      if (this.state.kind !== "block" && field.length === 3 && state.kind === "block-header") break;
    }
    if (at === chunk.length) this.seen += chunk.length;
    return at;
  }

  /** At the end of the input: throws unless it ended between frames, after at least one. */
  finish(): void {
    if (this.state.kind !== "magic" || this.field.length > 0)
      throw refuse(`the stream is truncated (it ends inside a frame, after ${this.seen} bytes)`);
    if (this.frames === 0) throw refuse("the stream holds no frame");
  }

  private fieldLength(): number {
    switch (this.state.kind) {
      case "magic":
      case "skip-size":
      case "checksum":
        return 4;
      case "header":
        return this.state.need === 0 ? 1 : this.state.need;
      case "block-header":
        return 3;
      default:
        return 0;
    }
  }

  private readField(field: number[], end: number): void {
    const word = (field[0]! | (field[1]! << 8) | (field[2]! << 16) | ((field[3] ?? 0) << 24)) >>> 0;
    switch (this.state.kind) {
      case "magic":
        if (word === ZSTD_MAGIC) this.state = { kind: "header", need: 0 };
        else if ((word & 0xfffffff0) >>> 0 === 0x184d2a50) this.state = { kind: "skip-size" };
        else
          throw refuse(
            `${this.frames === 0 ? "it does not start with" : "data after a frame is not"} a zstd frame (${Buffer.from(field).toString("hex")})`,
          );
        return;
      case "skip-size":
        this.state = { kind: "skip", left: word };
        if (word === 0) this.endOf(this.state, end);
        return;
      case "header":
        this.readHeader(field, end);
        return;
      case "block-header": {
        const last = (word & 1) === 1;
        const type = (word >> 1) & 3;
        const size = word >>> 3;
        if (type === 3) throw refuse("a block has the reserved type");
        // For an RLE block the size is what it regenerates: bounded the same (Block_Maximum_Size).
        if (size > MAX_BLOCK_BYTES) throw refuse(`a block of ${size} bytes is over the format's ${MAX_BLOCK_BYTES}`);
        this.state = { kind: "block", left: type === 1 ? 1 : size, last };
        if (this.state.left === 0) this.endOf(this.state, end);
        return;
      }
      case "checksum":
        this.state = { kind: "magic" };
        this.safeBytes = end;
        return;
      default:
        return;
    }
  }

  private readHeader(field: number[], end: number): void {
    const descriptor = field[0]!;
    if (descriptor & 8) throw refuse("a frame header has its reserved bit set");
    if (descriptor & 3) throw refuse("a frame names a dictionary, which no cache save uses");
    const singleSegment = (descriptor >> 5) & 1;
    const contentFlag = descriptor >> 6;
    let window: number;
    if (singleSegment) {
      // The window is the content size: 1, 2 (plus 256), 4 or 8 bytes after the descriptor.
      const bytes = field.slice(1);
      window = bytes.reduceRight((value, byte) => value * 256 + byte, 0) + (contentFlag === 1 ? 256 : 0);
    } else {
      const exponent = field[1]! >> 3;
      const base = 2 ** (10 + exponent);
      window = base + (base / 8) * (field[1]! & 7);
    }
    if (window > MAX_ZSTD_WINDOW_BYTES)
      throw refuse(
        `a frame declares a window of ${window} bytes, over the ${MAX_ZSTD_WINDOW_BYTES} a cache archive may use`,
      );
    this.checksum = ((descriptor >> 2) & 1) === 1;
    this.frames += 1;
    this.state = { kind: "block-header" };
    this.safeBytes = end;
  }

  private endOf(state: State, end: number): void {
    if (state.kind === "skip") this.state = { kind: "magic" };
    else if (state.kind === "block")
      this.state = state.last ? (this.checksum ? { kind: "checksum" } : { kind: "magic" }) : { kind: "block-header" };
    this.safeBytes = end;
  }
}
