// Orders the records of a WrittenFileList by path, last of each path kept, in slices of synchronous work.
import type { WrittenFileList } from "./written-files.js";

/** Records merged or checked between two looks at the clock. */
const STEP_RECORDS = 2048;

/**
 * The indexes of `list`'s records in path order (as JavaScript compares the paths as strings), only the
 * last added of each path kept. Works in stretches of at most about `sliceMs` of synchronous time, the
 * event loop getting a turn (setImmediate) between them. Holds two 32-bit indexes per record while sorting.
 * The list must not be added to meanwhile.
 */
export async function orderByPath(list: WrittenFileList, sliceMs: number): Promise<Uint32Array> {
  let sliceStartedAt = performance.now();
  const takeTurnIfDue = async (): Promise<void> => {
    if (performance.now() - sliceStartedAt < sliceMs) return;
    await new Promise((resolve) => setImmediate(resolve));
    sliceStartedAt = performance.now();
  };
  const sort = new MergeSortByPath(list);
  while (!sort.step(STEP_RECORDS)) await takeTurnIfDue();
  const sorted = sort.result();
  let kept = 0;
  for (let begin = 0; begin < sorted.length; begin += STEP_RECORDS) {
    kept = keepLastOfEachPath(list, sorted, begin, Math.min(begin + STEP_RECORDS, sorted.length), kept);
    await takeTurnIfDue();
  }
  return kept === sorted.length ? sorted : sorted.slice(0, kept);
}

/**
 * A bottom-up merge sort of record indexes by path that can stop after any record and go on later. Stable:
 * records with equal paths stay in the order added. The loops are in `step`, a plain function called many
 * times, because V8 does not optimize a long loop inside an async function (no on-stack replacement there).
 */
class MergeSortByPath {
  private from: Uint32Array;
  private to: Uint32Array;
  /** Length of the sorted runs being merged in pairs in this pass. */
  private width = 1;
  /** The pair being merged: the left run is [start, middle), the right one [middle, end); `out` is the next output. */
  private start = 0;
  private left = 0;
  private right = 0;
  private out = 0;

  constructor(private readonly list: WrittenFileList) {
    const count = list.length;
    this.from = new Uint32Array(count);
    for (let index = 0; index < count; index += 1) this.from[index] = index;
    this.to = new Uint32Array(count);
    this.startPair(0);
  }

  /** Merges up to `records` more records; true once the whole list is sorted. */
  step(records: number): boolean {
    const { list } = this;
    const count = list.length;
    let budget = records;
    while (this.width < count) {
      const { from, to } = this;
      const middle = Math.min(this.start + this.width, count);
      const end = Math.min(this.start + 2 * this.width, count);
      let { left, right, out } = this;
      const stop = Math.min(end, out + budget);
      for (; out < stop; out += 1) {
        const leftRecord = from[left] ?? 0;
        const rightRecord = from[right] ?? 0;
        // Ties take the left run's record: the one added first stays first.
        if (left < middle && (right >= end || list.comparePaths(leftRecord, rightRecord) <= 0)) {
          to[out] = leftRecord;
          left += 1;
        } else {
          to[out] = rightRecord;
          right += 1;
        }
      }
      budget -= stop - this.out;
      this.left = left;
      this.right = right;
      this.out = out;
      if (out < end) return false;
      if (end < count) this.startPair(end);
      else {
        this.from = to;
        this.to = from;
        this.width *= 2;
        this.startPair(0);
      }
      if (budget <= 0) return this.width >= count;
    }
    return true;
  }

  /** The sorted indexes, once step has returned true. */
  result(): Uint32Array {
    return this.from;
  }

  private startPair(start: number): void {
    this.start = start;
    this.left = start;
    this.right = Math.min(start + this.width, this.list.length);
    this.out = start;
  }
}

/**
 * Moves the records of sorted[begin, end) that are the last of their path to sorted[kept...] (kept <= begin),
 * comparing each with the next one; returns the new count kept.
 */
function keepLastOfEachPath(list: WrittenFileList, sorted: Uint32Array, begin: number, end: number, kept: number): number {
  let count = kept;
  for (let position = begin; position < end; position += 1) {
    const record = sorted[position] ?? 0;
    const next = sorted[position + 1];
    if (next === undefined || list.comparePaths(record, next) !== 0) {
      sorted[count] = record;
      count += 1;
    }
  }
  return count;
}
