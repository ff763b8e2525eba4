// A read-only view of a WrittenFileList sorted by path, one record per path, that holds no object per file.
import type { ReadonlyList } from "../core/readonly-list.js";
import { orderByPath } from "./order-by-path.js";
import type { WrittenFileList, WrittenFileRecord } from "./written-files.js";

/**
 * The files of a WrittenFileList in path order (as JavaScript compares strings), the last one added
 * of each path kept: with files added in archive order, the one on disk. It keeps the list and one
 * 32-bit record index per file; `at` and iteration build a fresh object per call. `toJSON` gives the
 * array, so JSON.stringify prints it as one. The list must not be added to once this view is made.
 */
export class FilesByPath implements ReadonlyList<WrittenFileRecord> {
  private constructor(
    private readonly list: WrittenFileList,
    private readonly order: Uint32Array,
  ) {}

  /**
   * Sorts `list` by path and drops all but the last of each path. The work is done in stretches of
   * at most about `sliceMs` of synchronous time, the event loop getting a turn (setImmediate) between them.
   */
  static async of(list: WrittenFileList, sliceMs: number): Promise<FilesByPath> {
    return new FilesByPath(list, await orderByPath(list, sliceMs));
  }

  get length(): number {
    return this.order.length;
  }

  /** The file at `index` (from the end when negative), or undefined out of range, as Array.prototype.at. */
  at(index: number): WrittenFileRecord | undefined {
    const whole = Math.trunc(index) || 0;
    const position = whole < 0 ? whole + this.order.length : whole;
    const record = this.order[position];
    return record === undefined ? undefined : this.list.at(record);
  }

  *[Symbol.iterator](): Iterator<WrittenFileRecord> {
    for (const record of this.order) yield this.list.at(record);
  }

  /** Every file as an object, in path order. */
  toJSON(): WrittenFileRecord[] {
    return Array.from(this.order, (record) => this.list.at(record));
  }
}
