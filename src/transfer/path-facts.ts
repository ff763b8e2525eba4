// Small facts about host paths that the packer, the tree scan and the extractor all report.
import type { Stats } from "node:fs";

/** The "\n" characters in a name: `find` prints a name that has them over that many more lines. */
export function countNewlines(name: string): number {
  let count = 0;
  for (let at = name.indexOf("\n"); at !== -1; at = name.indexOf("\n", at + 1)) count += 1;
  return count;
}

/** What kind of special file (neither file, directory nor symlink) `info` describes, for "not uploaded" notices. */
export function describeSpecialFile(info: Stats): string {
  if (info.isSocket()) return "socket";
  if (info.isFIFO()) return "fifo";
  if (info.isCharacterDevice()) return "character device";
  if (info.isBlockDevice()) return "block device";
  return "special file";
}
