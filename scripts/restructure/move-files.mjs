// Replays the restructure's file moves: `git mv` by scripts/restructure/mapping.mjs (test/ following src/), then every
// relative import, export, dynamic import and `new URL(..., import.meta.url)` specifier that names a moved file, or is
// written in one, is rewritten. Usage: node scripts/restructure/move-files.mjs [--dry-run]
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, posix, relative } from "node:path";
import { MOVES } from "./mapping.mjs";

const dryRun = process.argv.includes("--dry-run");
const root = execFileSync("git", ["rev-parse", "--show-toplevel"], { encoding: "utf8" }).trim();
process.chdir(root);
const tracked = execFileSync("git", ["ls-files", "src", "test", "bench", "local-cluster", "scripts"], { encoding: "utf8" }).split("\n").filter(Boolean);
const trackedSet = new Set(tracked);

/** The new path of a source path by the longest matching entry, or undefined when no entry covers it. */
function mapPath(path) {
  let best;
  for (const [from, to] of MOVES) {
    // A folder moved into its own sub-folder is not moved again (the script may run on a tree it already moved).
    const hit = from.endsWith("/") ? path.startsWith(from) && !(to.startsWith(from) && path.startsWith(to)) : path === from;
    if (hit && (best === undefined || from.length > best[0].length)) best = [from, to];
  }
  if (best === undefined) return undefined;
  return best[0].endsWith("/") ? best[1] + path.slice(best[0].length) : best[1];
}

/** test/<dir>/<name>.test.ts follows src/<dir>/<name>.ts, else the longest src/<dir>/<prefix>.ts its name starts with, else src/<dir>/'s folder entry. */
function mapTestPath(path) {
  if (/^test\/(fixtures|support|e2e|fake-kubectl|local-cluster|scripts)\//.test(path)) return undefined;
  const rest = path.slice("test/".length);
  const dir = posix.dirname(rest) === "." ? "" : posix.dirname(rest) + "/";
  const base = posix.basename(rest);
  const stem = base.replace(/\.test\.ts$/, "");
  if (stem !== base) {
    const candidates = tracked.filter((file) => file.startsWith(`src/${dir}`) && !file.slice(`src/${dir}`.length).includes("/") && file.endsWith(".ts"));
    const names = candidates.map((file) => posix.basename(file, ".ts")).filter((name) => stem === name || stem.startsWith(`${name}-`)).sort((a, b) => b.length - a.length);
    if (names.length > 0) {
      const moved = mapPath(`src/${dir}${names[0]}.ts`);
      if (moved !== undefined) {
        const newDir = posix.dirname(moved).slice("src".length);
        const newStem = stem === names[0] ? posix.basename(moved, ".ts") : stem;
        return `test${newDir}/${newStem}.test.ts`;
      }
      return undefined;
    }
  }
  const moved = mapPath(`src/${rest}`);
  return moved === undefined ? undefined : `test/${moved.slice("src/".length)}`;
}

const renames = new Map();
for (const file of tracked) {
  const to = file.startsWith("src/") ? mapPath(file) : file.startsWith("test/") ? mapTestPath(file) : undefined;
  if (to !== undefined && to !== file) renames.set(file, to);
}
const targets = new Map();
for (const [from, to] of renames) {
  if (targets.has(to) || (trackedSet.has(to) && !renames.has(to))) throw new Error(`${from} -> ${to}: the target is taken`);
  targets.set(to, from);
}
const newPathOf = (file) => renames.get(file) ?? file;

/** Compiled files live under dist/ mirroring the tree, so specifiers are resolved there; scripts/ runs as written. */
const isCompiled = (file) => /^(src|test|bench|local-cluster)\//.test(file) && file.endsWith(".ts");
const placeOf = (file) => (isCompiled(file) ? `dist/${file}` : file);

/** The tracked file (or folder) a specifier names, as a repository path; undefined for one it cannot name. */
function resolveTarget(file, specifier) {
  const resolved = posix.normalize(posix.join(posix.dirname(placeOf(file)), specifier));
  const inDist = resolved.startsWith("dist/");
  const path = inDist ? resolved.slice("dist/".length) : resolved;
  if (path.startsWith("../")) return undefined;
  const folder = specifier.endsWith("/");
  if (folder) return { path: path.endsWith("/") ? path : `${path}/`, folder, inDist, source: path };
  if (inDist && path.endsWith(".js") && trackedSet.has(path.replace(/\.js$/, ".ts"))) return { path: path.replace(/\.js$/, ".ts"), inDist, compiled: true };
  return { path, inDist };
}

function placeOfTarget(target, newPath) {
  if (target.compiled) return `dist/${newPath.replace(/\.ts$/, ".js")}`;
  return target.inDist ? `dist/${newPath}` : newPath;
}

function rewriteSpecifier(file, specifier) {
  const target = resolveTarget(file, specifier);
  if (target === undefined) return specifier;
  let newTarget = target.path;
  if (target.folder) newTarget = mapPath(target.path) ?? (target.path.startsWith("test/") ? undefined : undefined) ?? target.path;
  else newTarget = newPathOf(target.path);
  if (newTarget === target.path && !renames.has(file)) return specifier;
  let rewritten = posix.relative(posix.dirname(placeOf(newPathOf(file))), placeOfTarget(target, newTarget));
  if (!rewritten.startsWith("../")) rewritten = `./${rewritten}`;
  if (target.folder && !rewritten.endsWith("/")) rewritten += "/";
  return rewritten;
}

const SPECIFIER = /(\bfrom\s+|\bimport\s*\(\s*|\bimport\s+|new URL\(\s*)(["'])(\.\.?\/[^"']*)\2/g;
let rewrittenFiles = 0;
const contents = new Map();
for (const file of tracked) {
  if (!/\.(ts|mjs|js)$/.test(file) || !existsSync(file)) continue;
  const text = readFileSync(file, "utf8");
  const next = text.replace(SPECIFIER, (whole, lead, quote, specifier) => `${lead}${quote}${rewriteSpecifier(file, specifier)}${quote}`);
  if (next !== text) {
    contents.set(file, next);
    rewrittenFiles += 1;
  }
}

// Mentions of a moved path in comments and messages (`src/k8s/manifest.ts`, `src/result/`) follow it, when the path they
// name exists after the move; a folder moved into its own sub-folder (src/executor/) is left as written.
const finalPaths = new Set(tracked.map(newPathOf));
for (const path of [...finalPaths]) for (let at = path.indexOf("/"); at >= 0; at = path.indexOf("/", at + 1)) finalPaths.add(path.slice(0, at + 1));
const MENTION = /\bsrc\/[A-Za-z0-9_.\-/]*[A-Za-z0-9_/]/g;
let mentions = 0;
for (const file of tracked) {
  if (!/\.(ts|mjs|js)$/.test(file) || !existsSync(file) || file.startsWith("scripts/restructure/")) continue;
  const text = contents.get(file) ?? readFileSync(file, "utf8");
  const next = text.replace(MENTION, (mention) => {
    const moved = mapPath(mention);
    if (moved === undefined || moved === mention || !finalPaths.has(moved)) return mention;
    if (mention.endsWith("/") && moved.startsWith(mention)) return mention;
    mentions += 1;
    return moved;
  });
  if (next !== text) contents.set(file, next);
}
console.log(`${mentions} mentions of moved paths rewritten`);

for (const [from, to] of [...renames].sort()) console.log(`${from} -> ${to}`);
console.log(`${renames.size} files moved, ${rewrittenFiles} files' specifiers rewritten${dryRun ? " (dry run)" : ""}`);
if (dryRun) process.exit(0);
for (const [from, to] of renames) {
  mkdirSync(dirname(join(root, to)), { recursive: true });
  execFileSync("git", ["mv", from, to]);
}
for (const [file, text] of contents) writeFileSync(newPathOf(file), text);
