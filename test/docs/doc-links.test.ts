// Every relative link of README.md and docs/*.md points at a file that exists, and at a heading that exists there.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { REPO_ROOT } from "../support/run-cli.js";

const PAGES = [
  join(REPO_ROOT, "README.md"),
  ...readdirSync(join(REPO_ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => join(REPO_ROOT, "docs", name)),
];

/** The text outside code: fenced blocks and inline code hold examples, not links. */
function stripCode(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "");
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function readAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of text.replace(/^```[\s\S]*?^```/gm, "").matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = match[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
    seen.set(slug, count + 1);
  }
  return anchors;
}

function findBrokenLinks(page: string): string[] {
  const text = readFileSync(page, "utf8");
  const broken: string[] = [];
  for (const match of stripCode(text).matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = match[1]!;
    if (/^[a-z]+:/i.test(target)) continue;
    const [path, anchor] = target.split("#") as [string, string | undefined];
    const file = path === "" ? page : join(dirname(page), path);
    const where = `${relative(REPO_ROOT, page)}: ${target}`;
    if (!existsSync(file)) broken.push(`${where} (no such file)`);
    else if (
      anchor !== undefined &&
      statSync(file).isFile() &&
      file.endsWith(".md") &&
      !readAnchors(readFileSync(file, "utf8")).has(anchor)
    )
      broken.push(`${where} (no such heading)`);
  }
  return broken;
}

describe("the documentation's links", () => {
  it("point at files and headings that exist, from README.md and every page of docs/", () => {
    assert.deepEqual(PAGES.flatMap(findBrokenLinks), []);
  });
});
