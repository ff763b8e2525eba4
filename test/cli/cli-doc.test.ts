// Keeps docs/cli.md in step with the CLI: the flags each command's --help prints, read from the program itself.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Command } from "commander";
import { buildProgram } from "../../src/cli/main.js";
import { REPO_ROOT } from "../support/run-cli.js";

const CLI_DOC = join(REPO_ROOT, "docs", "cli.md");

/** A flag as prose names it: `--cache` is not named by `--cache-dir`, nor `--out` by `--outputs`. */
const FLAG = /(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*(?![\w-])/g;

/** Each command's long flags, exactly those its --help lists (commander's own view of the visible options). */
async function readHelpFlags(): Promise<Map<string, Set<string>>> {
  const program = await buildProgram(async () => 0);
  const flags = new Map<string, Set<string>>();
  for (const command of program.commands as Command[]) {
    const options = command.createHelp().visibleOptions(command);
    flags.set(
      command.name(),
      new Set(options.map((option) => option.long).filter((long): long is string => long !== undefined)),
    );
  }
  return flags;
}

/** The page split at its `## ` headings: `## run` gives the section `run`, up to the next heading of that level. */
function readSections(text: string): Map<string, string> {
  const sections = new Map<string, string>();
  for (const part of text.split(/^## /m).slice(1)) {
    const newline = part.indexOf("\n");
    sections.set(part.slice(0, newline).trim(), part.slice(newline + 1));
  }
  return sections;
}

function findFlags(text: string): Set<string> {
  return new Set(text.match(FLAG) ?? []);
}

/** What a section declares as its command's own: its synopsis (code blocks) and the first cell of its option table. */
function readDeclaredFlags(section: string): Set<string> {
  const synopses = [...section.matchAll(/^```\n([\s\S]*?)^```/gm)].map((match) => match[1]!);
  const firstCells = section
    .split("\n")
    .filter((line) => line.startsWith("| `--"))
    .map((line) => line.split(" | ")[0]!);
  return findFlags([...synopses, ...firstCells].join("\n"));
}

describe("docs/cli.md", () => {
  it("has a section for every command of the CLI", async () => {
    const sections = readSections(readFileSync(CLI_DOC, "utf8"));
    const missing = [...(await readHelpFlags()).keys()].filter((name) => !sections.has(name));
    assert.deepEqual(missing, [], `commands without a "## <name>" section in docs/cli.md: ${missing.join(", ")}`);
  });

  it("names in each command's section every flag that command's --help prints", async () => {
    const sections = readSections(readFileSync(CLI_DOC, "utf8"));
    const unnamed: string[] = [];
    for (const [name, flags] of await readHelpFlags()) {
      const named = findFlags(sections.get(name) ?? "");
      for (const flag of flags) if (flag !== "--help" && !named.has(flag)) unnamed.push(`${name} ${flag}`);
    }
    assert.deepEqual(
      unnamed,
      [],
      `flags --help prints that docs/cli.md does not name in their command's section: ${unnamed.join(", ")}`,
    );
  });

  it("names --help, which every command prints", () => {
    assert.ok(findFlags(readFileSync(CLI_DOC, "utf8")).has("--help"));
  });

  it("names no flag that no command's --help prints", async () => {
    const known = new Set([...(await readHelpFlags()).values()].flatMap((flags) => [...flags]));
    const unknown = [...findFlags(readFileSync(CLI_DOC, "utf8"))].filter((flag) => !known.has(flag));
    assert.deepEqual(unknown, [], `docs/cli.md names flags that no --help prints: ${unknown.join(", ")}`);
  });

  it("declares in a command's synopsis and option table only flags that command's --help prints", async () => {
    const sections = readSections(readFileSync(CLI_DOC, "utf8"));
    const misplaced: string[] = [];
    for (const [name, flags] of await readHelpFlags()) {
      for (const flag of readDeclaredFlags(sections.get(name) ?? ""))
        if (!flags.has(flag)) misplaced.push(`${name} ${flag}`);
    }
    assert.deepEqual(
      misplaced,
      [],
      `flags declared under a command whose --help does not print them: ${misplaced.join(", ")}`,
    );
  });
});
