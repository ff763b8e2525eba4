// Paths that probe the order of JavaScript string comparison, for the tests of the written-files list and its views.
import { sha256Of } from "./tree-helpers.js";

/**
 * Paths whose UTF-8 byte order and UTF-16 order disagree (U+E000..U+FFFF against characters above U+FFFF),
 * prefixes of each other, one-, two-, three- and four-byte characters, a newline.
 */
export const TRICKY_PATHS: readonly string[] = [
  "a",
  "a/b",
  "a.b",
  "a/",
  "B",
  "b",
  "",
  "é",
  "e\u0301",
  "日本語",
  "日本",
  "\u07ff",
  "\u0800",
  "\ud7ff",
  "\ue000",
  "\ufffd",
  "\uff21",
  "\uffff",
  "😀",
  "\u{10000}",
  "\u{10ffff}",
  "x😀",
  "x\ue000",
  "x\uffff/y",
  "z\n",
  "z\nz",
];

const PIECES = ["a", "b", "/", ".", "é", "日", "\ue000", "\uffff", "😀", "\u{10000}", "0"];

/** `count` paths of 1 to 5 pieces from a seeded generator: short enough that many repeat. */
export function randomPaths(seed: number, count: number): string[] {
  let state = seed;
  const next = (bound: number): number => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return Math.floor((state / 2 ** 31) * bound);
  };
  return Array.from({ length: count }, () =>
    Array.from({ length: 1 + next(5) }, () => PIECES[next(PIECES.length)]).join(""),
  );
}

/** A record for `path`, its size and digest telling it apart from other records of the same path. */
export function recordFor(path: string, serial: number): { path: string; size: number; sha256: string } {
  return { path, size: serial, sha256: sha256Of(`${serial}`) };
}

/** JavaScript's comparison of two strings as -1, 0 or 1. */
export function compareStrings(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}

/** What the report listed before the compact view: a stable sort of the records by path, the last of each path kept. */
export function sortedLastOfEachPath<T extends { readonly path: string }>(records: readonly T[]): T[] {
  const sorted = [...records].sort((left, right) => compareStrings(left.path, right.path));
  return sorted.filter((record, index) => sorted[index + 1]?.path !== record.path);
}
