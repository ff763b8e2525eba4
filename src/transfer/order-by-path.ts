// Orders the records of a WrittenFileList by path, last of each path kept, in slices of synchronous work.
import { utf16RankOfByte, type WrittenFileList } from "./written-files.js";

/** Records sorted between two looks at the clock. */
const STEP_RECORDS = 2048;

/**
 * The indexes of `list`'s records in path order (as JavaScript compares the paths as strings), only the
 * last added of each path kept. Works in stretches of at most about `sliceMs` of synchronous time, the
 * event loop getting a turn (setImmediate) between them. Holds three 32-bit numbers and a byte per record
 * while sorting (its index, where its path starts and ends, whether it is dropped), plus at most three numbers
 * per two records for the ranges left to sort. The list must not be added to meanwhile.
 */
export async function orderByPath(list: WrittenFileList, sliceMs: number): Promise<Uint32Array> {
  let sliceStartedAt = performance.now();
  const sort = new MultikeySortByPath(list);
  while (!sort.step(STEP_RECORDS)) {
    if (performance.now() - sliceStartedAt < sliceMs) continue;
    await new Promise((resolve) => setImmediate(resolve));
    sliceStartedAt = performance.now();
  }
  return sort.result();
}

/** Ranges shorter than this are finished by insertion sort. */
const INSERTION_SORT_BELOW = 12;
/** Bytes of a path read into one key: three ranks of 9 bits fit a small integer. */
const KEY_BYTES = 3;
/** The bits of a key's last byte: zero when the path ended before that byte. */
const LAST_BYTE_MASK = 0x1ff;

/**
 * A multikey quicksort (Bentley and Sedgewick, "Fast algorithms for sorting and searching strings") of record
 * indexes by path. Each pass splits a range three ways on the key at one position, the ranks of the next three
 * bytes, so a prefix shared by many paths (`src/module/package/...`) is read once per range rather than once per
 * comparison, as a comparison sort does: at 96,000 output paths a merge sort with a byte comparator took ~0.3 s
 * of the download. A byte ranks by its place in UTF-16 order (utf16RankOfByte) plus one, and a path that has
 * ended ranks 0, so a path sorts before any longer one: the order of JavaScript's string comparison.
 *
 * Records with equal paths meet in one range whose key says the paths ended: there they are put in the order
 * added and all but the last are marked dropped (for a short range, insertion sort compares neighbours).
 * The ranges left to sort wait on an explicit stack, so the work can stop after any range and go on later,
 * and nothing recurses as deep as a shared prefix is long.
 */
class MultikeySortByPath {
  private readonly order: Uint32Array;
  private readonly dropped: Uint8Array;
  private readonly bytes: Buffer;
  private readonly starts: Uint32Array;
  private readonly ends: Uint32Array;
  /** Ranges left to sort, three numbers each: [low, high) of `order` and the byte position they are split at. */
  private readonly pending: number[] = [];

  constructor(list: WrittenFileList) {
    const count = list.length;
    ({ bytes: this.bytes, starts: this.starts, ends: this.ends } = list.pathSpans());
    this.order = new Uint32Array(count);
    for (let index = 0; index < count; index += 1) this.order[index] = index;
    this.dropped = new Uint8Array(count);
    this.queue(0, count, 0);
  }

  /** Sorts ranges until about `records` records were handled; true once the whole list is sorted. */
  step(records: number): boolean {
    const { pending } = this;
    let budget = records;
    while (pending.length > 0 && budget > 0) {
      const depth = pending.pop() ?? 0;
      const high = pending.pop() ?? 0;
      const low = pending.pop() ?? 0;
      budget -= high - low;
      if (high - low < INSERTION_SORT_BELOW) this.insertionSort(low, high, depth);
      else this.split(low, high, depth);
    }
    return pending.length === 0;
  }

  /** The sorted indexes without the dropped ones, once step has returned true. */
  result(): Uint32Array {
    const { order, dropped } = this;
    let kept = 0;
    for (const record of order) {
      if (dropped[record] === 0) order[kept++] = record;
    }
    return kept === order.length ? order : order.slice(0, kept);
  }

  /** The ranks of `record`'s three bytes from `depth` in one number; see the class comment. */
  private keyAt(record: number, depth: number): number {
    const { bytes } = this;
    const at = (this.starts[record] ?? 0) + depth;
    const end = this.ends[record] ?? 0;
    const first = at < end ? utf16RankOfByte(bytes[at] ?? 0) + 1 : 0;
    const second = at + 1 < end ? utf16RankOfByte(bytes[at + 1] ?? 0) + 1 : 0;
    const third = at + 2 < end ? utf16RankOfByte(bytes[at + 2] ?? 0) + 1 : 0;
    return (first << 18) | (second << 9) | third;
  }

  /** Splits [low, high) by the key at `depth` into less, equal and greater, and queues the parts. */
  private split(low: number, high: number, depth: number): void {
    const { order } = this;
    const pivot = medianOfThree(
      this.keyAt(order[low] ?? 0, depth),
      this.keyAt(order[(low + high) >>> 1] ?? 0, depth),
      this.keyAt(order[high - 1] ?? 0, depth),
    );
    let less = low;
    let scan = low;
    let greater = high - 1;
    while (scan <= greater) {
      const record = order[scan] ?? 0;
      const key = this.keyAt(record, depth);
      if (key < pivot) {
        order[scan] = order[less] ?? 0;
        order[less] = record;
        less += 1;
        scan += 1;
      } else if (key > pivot) {
        order[scan] = order[greater] ?? 0;
        order[greater] = record;
        greater -= 1;
      } else scan += 1;
    }
    this.queue(low, less, depth);
    this.queue(greater + 1, high, depth);
    if ((pivot & LAST_BYTE_MASK) !== 0) this.queue(less, greater + 1, depth + KEY_BYTES);
    else this.keepLast(less, greater + 1);
  }

  /** [low, high) holds one path several times: the records go in the order added, and only the last is kept. */
  private keepLast(low: number, high: number): void {
    const same = this.order.subarray(low, high).sort();
    for (let index = 0; index < same.length - 1; index += 1) this.dropped[same[index] ?? 0] = 1;
  }

  /** Queues [low, high) if it has two records or more: the queued ranges are disjoint, so at most n / 2 wait. */
  private queue(low: number, high: number, depth: number): void {
    if (high - low > 1) this.pending.push(low, high, depth);
  }

  /** Sorts a short range, comparing from `depth` (the bytes before it are equal in the whole range). */
  private insertionSort(low: number, high: number, depth: number): void {
    const { order } = this;
    for (let next = low + 1; next < high; next += 1) {
      const record = order[next] ?? 0;
      let slot = next;
      while (slot > low && this.compareFrom(order[slot - 1] ?? 0, record, depth) > 0) {
        order[slot] = order[slot - 1] ?? 0;
        slot -= 1;
      }
      order[slot] = record;
    }
    // Equal paths are neighbours now, the one added last at the end.
    for (let index = low; index < high - 1; index += 1) {
      const record = order[index] ?? 0;
      if (this.samePathFrom(record, order[index + 1] ?? 0, depth)) this.dropped[record] = 1;
    }
  }

  /** Compares two records' paths from `depth` on; equal paths compare by index. */
  private compareFrom(left: number, right: number, depth: number): number {
    for (let position = depth; ; position += KEY_BYTES) {
      const leftKey = this.keyAt(left, position);
      const rightKey = this.keyAt(right, position);
      if (leftKey !== rightKey) return leftKey - rightKey;
      if ((leftKey & LAST_BYTE_MASK) === 0) return left - right;
    }
  }

  private samePathFrom(left: number, right: number, depth: number): boolean {
    for (let position = depth; ; position += KEY_BYTES) {
      const leftKey = this.keyAt(left, position);
      if (leftKey !== this.keyAt(right, position)) return false;
      if ((leftKey & LAST_BYTE_MASK) === 0) return true;
    }
  }
}

function medianOfThree(a: number, b: number, c: number): number {
  if (a < b) return b < c ? b : a < c ? c : a;
  return a < c ? a : b < c ? c : b;
}
