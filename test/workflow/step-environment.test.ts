// Tests of what the steps' environment may hold: names a shell exports, no NUL, Linux's size limit, plain shell words.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InputError } from "../../src/core/errors.js";
import {
  checkStepEnvironment,
  findSecretShadowing,
  MAX_ENV_STRING_BYTES,
  readStepShell,
  type StepEnvironmentInput,
} from "../../src/workflow/step-environment.js";

const base: StepEnvironmentInput = { env: [{ name: "CI", value: "true" }], steps: [{ name: "build" }] };

function refusal(input: Partial<StepEnvironmentInput>): InputError {
  try {
    checkStepEnvironment({ ...base, ...input });
  } catch (error) {
    assert.ok(error instanceof InputError, String(error));
    return error;
  }
  assert.fail("expected an InputError");
}

describe("checkStepEnvironment", () => {
  it("accepts hostile values that are still text: newlines, quotes, $, backticks, backslashes, UTF-8", () => {
    const value = "a\nb 'c' \"d\" $e `f` \\g é 🚀";
    assert.doesNotThrow(() =>
      checkStepEnvironment({
        ...base,
        env: [{ name: "_X1", value }],
        secrets: [{ name: "S", value }],
        steps: [{ name: "s", env: [{ name: "Y", value }] }],
      }),
    );
  });

  it("refuses a name a shell cannot export, saying where it was configured", () => {
    assert.match(
      refusal({ env: [{ name: "1X", value: "" }] }).message,
      /^environment: expected a variable name .* found "1X"$/,
    );
    assert.match(
      refusal({ steps: [{ name: "build", env: [{ name: "A-B", value: "" }] }] }).message,
      /^step 1 \(build\) env: .*found "A-B"$/,
    );
    assert.match(refusal({ env: [{ name: "", value: "" }] }).message, /found ""$/);
  });

  it("refuses a NUL in a value as bad input and never quotes a secret's value", () => {
    assert.equal(
      refusal({ env: [{ name: "A", value: "x\0y" }] }).message,
      "environment: the value of A holds a NUL character, which no environment variable can carry",
    );
    const message = refusal({ secrets: [{ name: "TOKEN", value: "hunter2\0" }] }).message;
    assert.equal(message, "secrets: the value of TOKEN holds a NUL character, which no environment variable can carry");
  });

  it("refuses a value that is not valid Unicode, which UTF-8 cannot carry as it is", () => {
    assert.match(refusal({ env: [{ name: "A", value: "\uD800" }] }).message, /lone surrogate/);
  });

  it("refuses the variables the runner sets for every step", () => {
    for (const name of ["KNOTLESS_ENV", "KNOTLESS_STEP_MARK"])
      assert.match(refusal({ env: [{ name, value: "x" }] }).message, new RegExp(`${name} is set by the runner`));
  });

  it("refuses a variable Linux would not start a process with, and accepts one just within the limit", () => {
    const fits = "x".repeat(MAX_ENV_STRING_BYTES - "A=".length - 1);
    assert.doesNotThrow(() => checkStepEnvironment({ ...base, env: [{ name: "A", value: fits }] }));
    assert.match(refusal({ env: [{ name: "A", value: `${fits}x` }] }).message, /A would be 131073 bytes/);
    assert.match(
      refusal({ env: [{ name: "A", value: "é".repeat(65_535) }] }).message,
      /would be 131073 bytes/,
      "counted in UTF-8 bytes",
    );
  });

  it("refuses a shell that is empty or has control characters", () => {
    assert.match(refusal({ shell: "  " }).message, /shell: expected a command/);
    assert.match(refusal({ shell: "bash\n-e" }).message, /shell: expected plain words/);
  });
});

describe("readStepShell", () => {
  it("splits plain words and defaults to sh -e", () => {
    assert.deepEqual(readStepShell("bash -eo pipefail"), ["bash", "-eo", "pipefail"]);
    assert.deepEqual(readStepShell("  /bin/bash\t-e "), ["/bin/bash", "-e"]);
    assert.deepEqual(readStepShell(undefined), ["sh", "-e"]);
  });
});

describe("findSecretShadowing", () => {
  it("names each variable a secret of the same name overrides, and where it was set", () => {
    const input: StepEnvironmentInput = {
      env: [
        { name: "TOKEN", value: "a" },
        { name: "TOKEN", value: "b" },
        { name: "OTHER", value: "c" },
      ],
      secrets: [{ name: "TOKEN", value: "s" }],
      steps: [{ name: "one", env: [{ name: "TOKEN", value: "d" }] }, { name: "two" }],
    };
    assert.deepEqual(findSecretShadowing(input), [
      { name: "TOKEN", where: "the run's environment" },
      { name: "TOKEN", where: "step 1 (one) env" },
    ]);
    assert.deepEqual(findSecretShadowing({ ...input, secrets: [] }), []);
  });
});
