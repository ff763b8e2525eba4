import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InputError } from "../../src/errors.js";
import { parseStepsFile } from "../../src/input/steps-file.js";

function parseError(text: string): InputError {
  try {
    parseStepsFile(text, "steps.tsv");
  } catch (error) {
    assert.ok(error instanceof InputError);
    return error;
  }
  assert.fail("expected an InputError");
}

describe("parseStepsFile", () => {
  it("reads one step per line as name, tab, script and records where each was declared", () => {
    const steps = parseStepsFile("build\tmake all\ntest\tmake test && echo\tdone\n", "steps.tsv");
    assert.deepEqual(steps, [
      { name: "build", script: "make all", source: "steps.tsv:1" },
      { name: "test", script: "make test && echo\tdone", source: "steps.tsv:2" },
    ]);
  });

  it("ignores blank lines and comment lines", () => {
    const steps = parseStepsFile("# a comment\n\n   \n  # indented comment\nonly\ttrue\n", "f");
    assert.deepEqual(steps.map((s) => s.name), ["only"]);
    assert.equal(steps[0]!.source, "f:5");
  });

  it("accepts Windows line endings", () => {
    assert.deepEqual(parseStepsFile("a\techo a\r\nb\techo b\r\n", "f").map((s) => s.script), ["echo a", "echo b"]);
  });

  it("names the file and line of a line without a tab", () => {
    const error = parseError("ok\ttrue\nno tab here\n");
    assert.equal(error.location, "steps.tsv:2");
    assert.match(error.message, /^steps\.tsv:2: expected `name<TAB>script`/);
  });

  it("refuses an empty step name with its line", () => {
    assert.match(parseError("\techo hi\n").message, /steps\.tsv:1: expected a step name before the tab/);
  });

  it("refuses an empty script with its line", () => {
    assert.match(parseError("a\ttrue\nb\t   \n").message, /steps\.tsv:2: expected a script after the tab for step "b"/);
  });

  it("refuses a file without any step", () => {
    assert.match(parseError("# nothing\n\n").message, /steps\.tsv: expected at least one step/);
  });
});
