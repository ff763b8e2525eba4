// A read-only list type that arrays satisfy, for long lists that are not held as arrays of objects.

/**
 * A read-only list, in a fixed order, that may build its items on demand (so `at` and iteration may give
 * a fresh but equal object at each call). Arrays satisfy it. Implementations that are not arrays also
 * define `toJSON` giving the array, so JSON.stringify prints them as one.
 */
export interface ReadonlyList<T> extends Iterable<T> {
  readonly length: number;
  /** The item at `index` (from the end when negative), or undefined out of range, as Array.prototype.at. */
  at(index: number): T | undefined;
}
