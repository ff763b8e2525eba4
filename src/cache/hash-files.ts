// Hashes the checkout files a key's `hashFiles` patterns match: sha256 over their sorted relative paths and contents, streamed.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { lstat, readdir, realpath, stat } from "node:fs/promises";
import { join, sep } from "node:path";
import { InputError } from "../core/errors.js";
import { toPicomatchPattern } from "../workflow/glob-pattern.js";
import { GLOB_OPTIONS, loadPicomatch } from "../workflow/match-trigger.js";

export interface FileHash {
  /** sha256, hex: of nothing when no file matched. */
  readonly hash: string;
  /** How many files went into it. */
  readonly files: number;
  /** Worth telling the operator: nothing matched, a symlink that was not followed. */
  readonly warnings: readonly string[];
}

/** The characters that make a path segment a pattern rather than a name. */
const GLOB_META = /[*?[\]{}\\]/;

/** Where walking must start for a pattern: its leading segments that hold no glob character, `/`-joined ("" for the top). */
function findLiteralBase(pattern: string): { base: string; literal: boolean } {
  const segments = pattern.split("/").filter((segment) => segment !== "" && segment !== ".");
  const firstGlob = segments.findIndex((segment) => GLOB_META.test(segment));
  if (firstGlob < 0) return { base: segments.join("/"), literal: true };
  return { base: segments.slice(0, firstGlob).join("/"), literal: false };
}

function describeCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? String(error);
}

/** Whether `target` (a real path) is the checkout or inside it. */
function isInside(root: string, target: string): boolean {
  return target === root || target.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** The file a matching name stands for: a regular file itself, or a symlink's target when that is a regular file inside the checkout. */
async function resolveMatch(root: string, rel: string, warnings: string[]): Promise<string | undefined> {
  const path = join(root, rel);
  const info = await lstat(path);
  if (info.isFile()) return path;
  if (!info.isSymbolicLink()) return undefined;
  let target: string;
  try {
    target = await realpath(path);
  } catch {
    warnings.push(`the symlink ${rel} points at nothing; not hashed`);
    return undefined;
  }
  if (!isInside(root, target)) {
    warnings.push(`the symlink ${rel} points outside the checkout; not followed, not hashed`);
    return undefined;
  }
  return (await stat(target)).isFile() ? target : undefined;
}

/** Every name under `base` (relative to the root, `/`-separated) that is a file or a symlink; real directories only are entered. */
async function walk(root: string, base: string, visit: (rel: string) => void): Promise<void> {
  const stack = [base];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let entries;
    try {
      entries = await readdir(dir === "" ? root : join(root, dir), { withFileTypes: true });
    } catch (error) {
      const code = describeCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") continue;
      throw new InputError(`hashFiles: cannot list ${dir === "" ? "the checkout" : dir}: ${code}`);
    }
    for (const entry of entries) {
      const rel = dir === "" ? entry.name : `${dir}/${entry.name}`;
      if (entry.isDirectory()) stack.push(rel);
      else if (entry.isFile() || entry.isSymbolicLink()) visit(rel);
    }
  }
}

/** Whether every directory on the way to `rel` is a real directory (no symlink is followed on the way). */
async function isReachable(root: string, rel: string): Promise<boolean> {
  const segments = rel.split("/");
  for (let i = 1; i < segments.length; i++) {
    try {
      if (!(await lstat(join(root, ...segments.slice(0, i)))).isDirectory()) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/** The names (relative, `/`-separated) that match at least one pattern, sorted. */
async function listMatches(root: string, written: readonly string[]): Promise<string[]> {
  // `./src//**` means `src/**`: the names it is matched against have no `.` or empty segments.
  const patterns = written.map((pattern) =>
    pattern
      .split("/")
      .filter((segment) => segment !== "" && segment !== ".")
      .join("/"),
  );
  const matchers = patterns.map((pattern) => loadPicomatch().makeRe(toPicomatchPattern(pattern), GLOB_OPTIONS));
  const found = new Set<string>();
  const bases = new Set<string>();
  for (const pattern of patterns) {
    const { base, literal } = findLiteralBase(pattern);
    if (!literal) bases.add(base);
    else if (base !== "" && (await isReachable(root, base))) {
      try {
        const info = await lstat(join(root, base));
        if (info.isFile() || info.isSymbolicLink()) found.add(base);
      } catch (error) {
        if (describeCode(error) !== "ENOENT")
          throw new InputError(`hashFiles: cannot read ${base}: ${describeCode(error)}`);
      }
    }
  }
  // A base inside another is walked with it.
  const roots = [...bases].filter(
    (base) => ![...bases].some((other) => other !== base && (other === "" || base.startsWith(`${other}/`))),
  );
  for (const base of roots) {
    if (base !== "" && !(await isReachable(root, `${base}/x`))) continue;
    await walk(root, base, (rel) => {
      if (matchers.some((matcher) => matcher.test(rel))) found.add(rel);
    });
  }
  return [...found].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** sha256 of one file's contents, read as a stream. */
function hashContents(path: string, rel: string): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const hash = createHash("sha256");
    createReadStream(path)
      .on("error", (error) => reject(new InputError(`hashFiles: cannot read ${rel}: ${describeCode(error)}`)))
      .on("data", (chunk) => hash.update(chunk))
      .on("end", () => resolvePromise(hash.digest("hex")));
  });
}

/**
 * Hashes the regular files of the checkout that match any of `patterns` (doublestar-style globs relative to the
 * checkout, read as src/workflow/match-trigger.ts reads them: `*` within a segment, `**` across, dot files included).
 * The hash is sha256 over, for each matching file in sorted order of its relative path, `path NUL sha256(contents)
 * LF`: a renamed, added, removed or changed file changes it. Real directories are entered, symlinked ones are not; a
 * symlink to a regular file inside the checkout is hashed by its target's contents, one that leads out of the
 * checkout is skipped with a warning. No match: the hash of nothing, with a warning. An unreadable file is bad input.
 */
export async function hashCheckoutFiles(checkoutDir: string, patterns: readonly string[]): Promise<FileHash> {
  let root: string;
  try {
    root = await realpath(checkoutDir);
  } catch (error) {
    throw new InputError(`hashFiles: cannot read the checkout ${checkoutDir}: ${describeCode(error)}`);
  }
  const warnings: string[] = [];
  const outer = createHash("sha256");
  let files = 0;
  for (const rel of await listMatches(root, patterns)) {
    let path: string | undefined;
    try {
      path = await resolveMatch(root, rel, warnings);
    } catch (error) {
      throw new InputError(`hashFiles: cannot read ${rel}: ${describeCode(error)}`);
    }
    if (path === undefined) continue;
    outer.update(`${rel}\0${await hashContents(path, rel)}\n`);
    files++;
  }
  if (files === 0)
    warnings.push(
      `hashFiles ${patterns.map((pattern) => JSON.stringify(pattern)).join(" ")} matched no file in the checkout; it hashes nothing`,
    );
  return { hash: outer.digest("hex"), files, warnings };
}
