import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InputError } from "../../src/core/errors.js";
import { parseStepsFile } from "../../src/workflow/steps-file.js";

function parseError(text: string | Uint8Array): InputError {
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
    assert.deepEqual(
      steps.map((s) => s.name),
      ["only"],
    );
    assert.equal(steps[0]!.source, "f:5");
  });

  it("accepts Windows line endings", () => {
    assert.deepEqual(
      parseStepsFile("a\techo a\r\nb\techo b\r\n", "f").map((s) => s.script),
      ["echo a", "echo b"],
    );
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

  it("refuses a second step with a name already used, naming both lines", () => {
    const error = parseError("build\tmake\n# a comment\ntest\tmake test\n  build \tmake again\n");
    assert.equal(error.location, "steps.tsv:4");
    assert.equal(error.message, 'steps.tsv:4: step name "build" is already used at line 1');
  });

  it("reads a file given as bytes in UTF-8 like the same text", () => {
    const text = "grüße\techo 🎉\r\nzwei\tls\n";
    assert.deepEqual(parseStepsFile(Buffer.from(text), "f"), parseStepsFile(text, "f"));
  });

  it("refuses a line whose step name is not UTF-8, naming the line", () => {
    const latin1 = Buffer.concat([
      Buffer.from("ok\ttrue\n"),
      Buffer.from("gr\xfc\xdfe\techo hi\n", "latin1"),
      Buffer.from("later\ttrue\n"),
    ]);
    const error = parseError(latin1);
    assert.equal(error.location, "steps.tsv:2");
    assert.equal(error.message, "steps.tsv:2: expected a step name in UTF-8");
  });

  it("refuses a line whose script is not UTF-8, naming the line and the step", () => {
    const error = parseError(
      Buffer.concat([Buffer.from("\n\nbuild\techo "), Buffer.from([0xc3, 0x28]), Buffer.from("\n")]),
    );
    assert.equal(error.message, 'steps.tsv:3: expected the script of step "build" in UTF-8');
  });

  it("refuses a step name cut in the middle of a multi-byte character at the end of the file", () => {
    assert.equal(
      parseError(Buffer.concat([Buffer.from("a\ttrue\n"), Buffer.from("🎉").subarray(0, 3)])).message,
      "steps.tsv:2: expected a step name in UTF-8",
    );
  });

  it("ignores a comment line that is not UTF-8, like any comment", () => {
    const steps = parseStepsFile(
      Buffer.concat([Buffer.from("  # caf"), Buffer.from([0xe9]), Buffer.from("\nonly\ttrue\n")]),
      "f",
    );
    assert.deepEqual(
      steps.map((s) => [s.name, s.source]),
      [["only", "f:2"]],
    );
  });

  it("refuses a file without any step", () => {
    assert.match(parseError("# nothing\n\n").message, /steps\.tsv: expected at least one step/);
  });
});
