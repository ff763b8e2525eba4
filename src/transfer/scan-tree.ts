// Lists a host tree the way the upload will archive it, before anything exists in the cluster.
import { accessSync, constants as fsConstants, lstatSync, readdirSync } from "node:fs";
import type { Dirent, Stats } from "node:fs";
import { InputError, describeError } from "../core/errors.js";
import type { SkippedPath } from "./pack-tree.js";
import { countNewlines, describeSpecialFile } from "./path-facts.js";

/**
 * What one host tree puts into the upload archive. `names` lists the archive name of every member
 * (`<archivePrefix>/<relative path>`, no trailing slash), each followed by a NUL byte, depth first in sorted
 * name order like the packer (src/transfer/pack-tree.ts): the `--null -T -` list a host GNU tar packs from.
 */
export interface TreeScan {
  readonly hostDir: string;
  readonly archivePrefix: string;
  readonly names: Buffer;
  readonly files: number;
  readonly dirs: number;
  readonly symlinks: number;
  /** Members (files, directories, symlinks); the root itself has none. */
  readonly entries: number;
  /** The "\n" characters in the members' relative paths (the pod's `find` prints such a name on several lines). */
  readonly nameNewlines: number;
  /** Sockets, fifos and devices: left out of the archive. */
  readonly skipped: readonly SkippedPath[];
}

/** A path of the tree cannot be listed or read: bad input (exit 2), found before the run touches the cluster. */
export class ScanError extends InputError {
  readonly path: string;

  constructor(path: string, message: string, options?: { cause?: unknown }) {
    // Node's system errors repeat the path after a comma ("EACCES: permission denied, access '/x'").
    super(`cannot upload ${path}: ${message.split(", ")[0]}`);
    if (options?.cause !== undefined) this.cause = options.cause;
    this.path = path;
  }
}

/**
 * Walks `hostDir` with synchronous calls: readdir for every directory (its entry types come with it, so only
 * entries of unknown type are lstat'ed) and access(R_OK) for every regular file, so an unreadable file is bad
 * input now rather than a failed upload after the Job exists. Symlinks are listed, not followed. At 50,000
 * files this costs ~0.1 s for the listing plus ~0.2 s for the access checks (bench/RESULTS.md).
 * Throws ScanError naming the first path that cannot be listed or read.
 */
export function scanTree(hostDir: string, archivePrefix: string): TreeScan {
  const names = new NulSeparatedNames();
  const skipped: SkippedPath[] = [];
  const counts = { files: 0, dirs: 0, symlinks: 0, nameNewlines: 0 };
  const walk = (dir: string, archiveDir: string, newlines: number): void => {
    for (const entry of listSorted(dir)) {
      const hostPath = `${dir}/${entry.name}`;
      const archivePath = `${archiveDir}/${entry.name}`;
      const pathNewlines = newlines + countNewlines(entry.name);
      const kind = kindOf(entry, hostPath);
      if (kind === "skip") {
        skipped.push({ path: hostPath, reason: `${describeSpecialFile(lstatOrThrow(hostPath))} cannot be archived` });
        continue;
      }
      if (kind === "file") {
        checkReadable(hostPath);
        counts.files += 1;
      } else if (kind === "symlink") counts.symlinks += 1;
      else counts.dirs += 1;
      names.add(archivePath);
      counts.nameNewlines += pathNewlines;
      if (kind === "directory") walk(hostPath, archivePath, pathNewlines);
    }
  };
  walk(hostDir.replace(/\/+$/, "") || "/", archivePrefix, 0);
  const entries = counts.files + counts.dirs + counts.symlinks;
  return {
    hostDir,
    archivePrefix,
    names: names.bytes(),
    files: counts.files,
    dirs: counts.dirs,
    symlinks: counts.symlinks,
    entries,
    nameNewlines: counts.nameNewlines,
    skipped,
  };
}

/**
 * Names written straight into one growing buffer, each followed by a NUL byte. Kept as strings and joined at the
 * end, the ~96,000 names of a large checkout lived long enough to be promoted and marked: ~70 ms of garbage
 * collection in a 0.5 s scan (bench/RESULTS.md).
 */
class NulSeparatedNames {
  private buffer = Buffer.allocUnsafe(64 * 1024);
  private used = 0;

  add(name: string): void {
    const room = 3 * name.length + 1; // UTF-8 takes at most 3 bytes per UTF-16 code unit
    if (this.used + room > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(2 * this.buffer.length, this.used + room));
      this.buffer.copy(grown, 0, 0, this.used);
      this.buffer = grown;
    }
    this.used += this.buffer.write(name, this.used, "utf8");
    this.buffer[this.used] = 0;
    this.used += 1;
  }

  /** The names so far (a view of the buffer, which is not written again by a finished scan). */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.used);
  }
}

function listSorted(dir: string): Dirent[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    throw new ScanError(dir, describeError(error), { cause: error });
  }
  return entries.sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
}

type Kind = "file" | "directory" | "symlink" | "skip";

function kindOf(entry: Dirent, hostPath: string): Kind {
  if (entry.isFile()) return "file";
  if (entry.isDirectory()) return "directory";
  if (entry.isSymbolicLink()) return "symlink";
  if (entry.isFIFO() || entry.isSocket() || entry.isCharacterDevice() || entry.isBlockDevice()) return "skip";
  // A file system that does not report entry types: ask lstat.
  const info = lstatOrThrow(hostPath);
  if (info.isFile()) return "file";
  if (info.isDirectory()) return "directory";
  if (info.isSymbolicLink()) return "symlink";
  return "skip";
}

function checkReadable(hostPath: string): void {
  try {
    accessSync(hostPath, fsConstants.R_OK);
  } catch (error) {
    throw new ScanError(hostPath, describeError(error), { cause: error });
  }
}

function lstatOrThrow(hostPath: string): Stats {
  try {
    return lstatSync(hostPath);
  } catch (error) {
    throw new ScanError(hostPath, describeError(error), { cause: error });
  }
}

/** The host trees of an upload, scanned before the run touches the cluster: the checkout, and the shared steps if any. */
export interface UploadTrees {
  readonly work: TreeScan;
  readonly steps: TreeScan | undefined;
}

/** Scans the checkout (archived under `work`) and the shared-steps directory (under `steps`). Throws ScanError. */
export function scanUploadTrees(checkoutDir: string, sharedStepsDir: string | undefined): UploadTrees {
  return {
    work: scanTree(checkoutDir, "work"),
    steps: sharedStepsDir === undefined ? undefined : scanTree(sharedStepsDir, "steps"),
  };
}
