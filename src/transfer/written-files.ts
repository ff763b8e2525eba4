// Keeps the list of written files as bytes rather than objects, during the extraction and in its report.
//
// Why: extractOutputs reads ~1 GiB of input chunks, whose external memory makes V8 run a major GC every
// few tens of MiB, and each one marks everything alive. 50,000 {path, size, sha256} objects kept for the
// report cost about as much CPU in those GCs as parsing the whole archive; the same list held in two
// growing typed buffers costs nothing to mark.

/** A written file as reported: `path` relative to destDir, posix, without a leading "./". */
export interface WrittenFileRecord {
  readonly path: string;
  readonly size: number;
  readonly sha256: string;
}

const HEX_DIGEST_LENGTH = 64;

/** The paths of a WrittenFileList as byte ranges of one buffer; see WrittenFileList.pathSpans. */
export interface PathSpans {
  readonly bytes: Buffer;
  readonly starts: Uint32Array;
  readonly ends: Uint32Array;
}

/** An append-only list of written files, in the order they were added. */
export class WrittenFileList {
  /** Each record's path (UTF-8) followed by its hex digest (64 ASCII bytes). */
  private text = Buffer.allocUnsafe(64 * 1024);
  private textUsed = 0;
  /** Per record: where its bytes end in `text`, and its size. */
  private numbers = new Float64Array(2 * 1024);
  private count = 0;

  get length(): number {
    return this.count;
  }

  add(file: WrittenFileRecord): void {
    if (file.sha256.length !== HEX_DIGEST_LENGTH)
      throw new RangeError(`expected a 64-character hex sha256, got ${JSON.stringify(file.sha256)}`);
    this.reserveText(3 * file.path.length + HEX_DIGEST_LENGTH);
    this.textUsed += this.text.write(file.path, this.textUsed, "utf8");
    this.textUsed += this.text.write(file.sha256, this.textUsed, "latin1");
    if (2 * this.count + 2 > this.numbers.length) {
      const grown = new Float64Array(2 * this.numbers.length);
      grown.set(this.numbers);
      this.numbers = grown;
    }
    this.numbers[2 * this.count] = this.textUsed;
    this.numbers[2 * this.count + 1] = file.size;
    this.count += 1;
  }

  /** The record added `index`-th (0 <= index < length), as an object. */
  at(index: number): WrittenFileRecord {
    if (!Number.isInteger(index) || index < 0 || index >= this.count)
      throw new RangeError(`no record ${index} in a list of ${this.count}`);
    const start = index === 0 ? 0 : (this.numbers[2 * index - 2] ?? 0);
    const end = this.numbers[2 * index] ?? 0;
    const digestStart = end - HEX_DIGEST_LENGTH;
    return {
      path: this.text.toString("utf8", start, digestStart),
      size: this.numbers[2 * index + 1] ?? 0,
      sha256: this.text.toString("latin1", digestStart, end),
    };
  }

  /**
   * Compares the paths of records `left` and `right` (valid indexes, unchecked) as JavaScript compares
   * the decoded strings (UTF-16 code units, shorter prefix first), without decoding them: negative, 0 or positive.
   */
  comparePaths(left: number, right: number): number {
    const text = this.text;
    let a = left === 0 ? 0 : (this.numbers[2 * left - 2] ?? 0);
    let b = right === 0 ? 0 : (this.numbers[2 * right - 2] ?? 0);
    const aEnd = (this.numbers[2 * left] ?? 0) - HEX_DIGEST_LENGTH;
    const bEnd = (this.numbers[2 * right] ?? 0) - HEX_DIGEST_LENGTH;
    for (; a < aEnd && b < bEnd; a += 1, b += 1) {
      const x = text[a] ?? 0;
      const y = text[b] ?? 0;
      if (x !== y) return utf16RankOfByte(x) - utf16RankOfByte(y);
    }
    return aEnd - a - (bEnd - b);
  }

  /**
   * Where each record's path lies in `bytes`: record i's UTF-8 path is bytes[starts[i], ends[i]). A snapshot for
   * sorting (see order-by-path.ts), valid until the list is added to; `bytes` is the list's own buffer, not a copy.
   */
  pathSpans(): PathSpans {
    const starts = new Uint32Array(this.count);
    const ends = new Uint32Array(this.count);
    for (let index = 0; index < this.count; index += 1) {
      starts[index] = index === 0 ? 0 : (this.numbers[2 * index - 2] ?? 0);
      ends[index] = (this.numbers[2 * index] ?? 0) - HEX_DIGEST_LENGTH;
    }
    return { bytes: this.text, starts, ends };
  }

  /** Every record as an object, in the order added. */
  toArray(): WrittenFileRecord[] {
    return Array.from({ length: this.count }, (_, index) => this.at(index));
  }

  private reserveText(bytes: number): void {
    if (this.textUsed + bytes <= this.text.length) return;
    const grown = Buffer.allocUnsafe(Math.max(2 * this.text.length, this.textUsed + bytes));
    this.text.copy(grown, 0, 0, this.textUsed);
    this.text = grown;
  }
}

/**
 * Where a UTF-8 byte sorts in UTF-16 code unit order, at the first byte where two valid UTF-8 strings differ
 * (after equal bytes, both are lead bytes or both continuation bytes of characters sharing a lead byte). Byte order
 * is code point order, which is UTF-16 order except that U+E000..U+FFFF (lead bytes 0xEE, 0xEF) sort after
 * the characters above U+FFFF (lead bytes 0xF0..0xF4, surrogate pairs in UTF-16): those two move past 0xF4.
 */
export function utf16RankOfByte(byte: number): number {
  return byte === 0xee || byte === 0xef ? byte + 0x10 : byte;
}
