// Points every import of NAME from FROM at TO instead (named imports, `import type`, and `export { } from`), after NAME's
// definition was moved from FROM to TO by hand. Usage: node scripts/restructure/move-export.mjs FROM TO NAME...
// FROM and TO are repository paths of .ts files (src/run/run-workflow.ts).
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { posix } from "node:path";

const [from, to, ...names] = process.argv.slice(2);
if (!from || !to || names.length === 0) throw new Error("usage: move-export.mjs FROM TO NAME...");
process.chdir(execFileSync("git", ["rev-parse", "--show-toplevel"], { encoding: "utf8" }).trim());
const files = execFileSync("git", ["ls-files", "src", "test", "bench", "local-cluster"], { encoding: "utf8" }).split("\n").filter((file) => file.endsWith(".ts"));
const moved = new Set(names);

function specifierFor(file, target) {
  let path = posix.relative(posix.dirname(file), target).replace(/\.ts$/, ".js");
  if (!path.startsWith("../")) path = `./${path}`;
  return path;
}

const CLAUSE = /(import|export)(\s+type)?\s*\{([^}]*)\}\s*from\s*"(\.[^"]+)";/g;
/** Marks an import statement removed whole (its line goes with it). */
const DROP = "\u0000drop\u0000";
let changed = 0;
for (const file of files) {
  const text = readFileSync(file, "utf8");
  const next = text.replace(CLAUSE, (whole, keyword, typeOnly, body, specifier) => {
    const resolved = posix.normalize(posix.join(posix.dirname(file), specifier)).replace(/\.js$/, ".ts");
    if (resolved !== from) return whole;
    const parts = body.split(",").map((part) => part.trim()).filter(Boolean);
    const isMoved = (part) => moved.has(part.replace(/^type\s+/, "").split(/\s+as\s+/)[0].trim());
    const staying = parts.filter((part) => !isMoved(part));
    const going = parts.filter(isMoved);
    if (going.length === 0) return whole;
    if (file === to) return staying.length === 0 ? DROP : `${keyword}${typeOnly ?? ""} { ${staying.join(", ")} } from "${specifier}";`;
    const allTypes = typeOnly === undefined && going.every((part) => part.startsWith("type "));
    const goingParts = allTypes ? going.map((part) => part.replace(/^type\s+/, "")) : going;
    const goingClause = `${keyword}${allTypes ? " type" : typeOnly ?? ""} { ${goingParts.join(", ")} } from "${specifierFor(file, to)}";`;
    if (staying.length === 0) return goingClause;
    return `${keyword}${typeOnly ?? ""} { ${staying.join(", ")} } from "${specifier}";\n${goingClause}`;
  });
  if (next !== text) {
    writeFileSync(file, next.replaceAll(`${DROP}\n`, ""));
    changed += 1;
  }
}
console.log(`${changed} files now import ${names.join(", ")} from ${to}`);
