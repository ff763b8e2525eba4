// Which pod files an artifact takes: its patterns resolved, the directories to list, the match, the archive's root. Pure.
import { posix } from "node:path";
import type { ArtifactSpec } from "../../workflow/artifact-types.js";
import { loadPicomatch } from "../../workflow/match-trigger.js";
import { isUnder } from "../../workflow/pod-path.js";

/** Where an artifact's patterns may point. */
export const ARTIFACT_ROOTS = ["/outputs", "/work"] as const;

/** A name that is one safe path component: it becomes `<out>/artifacts/<name>/`. */
const SAFE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

/** An artifact's patterns, ready to list and match. */
export interface ArtifactSelection {
  /** Absolute include patterns (a relative one resolved against /work). */
  readonly includes: readonly string[];
  /** Absolute exclude patterns (those written with a leading `!`). */
  readonly excludes: readonly string[];
  /** The fixed prefixes of the includes, none under another: what the pod lists (`find PATH -type f`). */
  readonly listRoots: readonly string[];
  /**
   * The deepest directory above every include's fixed prefix: the archive is packed relative to it, and the files sit
   * relative to it in `<out>/artifacts/<name>/` (`/work/dist/**` puts /work/dist/a.js at `a.js`; patterns under both
   * /work and /outputs keep `work/...` and `outputs/...`).
   */
  readonly packRoot: string;
}

/** The plan of an artifact, or why it cannot be collected (a bad name, a pattern outside /outputs and /work). */
export function selectArtifact(spec: ArtifactSpec): ArtifactSelection | { readonly problem: string } {
  if (!SAFE_NAME.test(spec.name) || spec.name.endsWith(".manifest.json"))
    return { problem: `the name ${JSON.stringify(spec.name)} is not a safe file name` };
  const includes: string[] = [];
  const excludes: string[] = [];
  for (const written of spec.paths) {
    const negated = written.startsWith("!");
    const pattern = resolvePattern(negated ? written.slice(1) : written);
    if (pattern.split("/").includes("..")) return { problem: `the pattern ${JSON.stringify(written)} contains ..` };
    if (!ARTIFACT_ROOTS.some((root) => pattern === root || pattern.startsWith(`${root}/`)))
      return { problem: `the pattern ${JSON.stringify(written)} is not under /outputs or /work` };
    (negated ? excludes : includes).push(pattern);
  }
  if (includes.length === 0) return { problem: "it has no pattern that includes files" };
  const prefixes = includes.map(fixedPrefix);
  const listRoots: string[] = [];
  for (const prefix of [...new Set(prefixes)].sort())
    if (!listRoots.some((root) => isUnder(prefix, root))) listRoots.push(prefix);
  const packRoot = prefixes
    .map((prefix, index) => (isGlob(includes[index]!) ? prefix : posix.dirname(prefix)))
    .reduce(commonDirectory);
  return { includes, excludes, listRoots, packRoot };
}

/** The files of `listed` (absolute pod paths) the plan takes, sorted, relative to its pack root; names with a newline apart (tar reads its list by lines). */
export function matchArtifactFiles(
  plan: ArtifactSelection,
  listed: readonly string[],
): { readonly files: readonly string[]; readonly unpackable: readonly string[] } {
  const options = { dot: true };
  const pm = loadPicomatch();
  const include = pm(plan.includes as string[], options);
  const exclude = plan.excludes.length > 0 ? pm(plan.excludes as string[], options) : () => false;
  const files = new Set<string>();
  const unpackable: string[] = [];
  for (const path of listed) {
    if (!include(path) || exclude(path) || !isUnder(path, plan.packRoot)) continue;
    if (path.includes("\n")) unpackable.push(path);
    else files.add(plan.packRoot === "/" ? path.slice(1) : path.slice(plan.packRoot.length + 1));
  }
  return { files: [...files].sort(), unpackable };
}

function resolvePattern(pattern: string): string {
  const absolute = pattern.startsWith("/") ? pattern : `/work/${pattern.replace(/^\.\//, "")}`;
  return absolute.length > 1 ? absolute.replace(/\/+$/, "") : absolute;
}

function isGlob(pattern: string): boolean {
  return loadPicomatch().scan(pattern).isGlob;
}

/** The part of a pattern before its first glob segment: the pattern itself when it has none. */
function fixedPrefix(pattern: string): string {
  const scanned = loadPicomatch().scan(pattern);
  if (!scanned.isGlob) return pattern;
  return scanned.base === "" ? "/" : scanned.base;
}

function commonDirectory(a: string, b: string): string {
  const left = a.split("/");
  const right = b.split("/");
  let n = 0;
  while (n < left.length && n < right.length && left[n] === right[n]) n += 1;
  return left.slice(0, n).join("/") || "/";
}
