import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { InputError } from "../../src/core/errors.js";
import { loadWorkflowFile } from "../../src/settings/load-workflow.js";
import { WorkflowError } from "../../src/workflow/workflow-errors.js";
import { makeTestTempDir } from "../support/temp-dir.js";
import { WORKFLOW_FIXTURES } from "../workflow/workflow-fixtures.js";

describe("loadWorkflowFile", () => {
  it("reads, parses and resolves a file, naming it as asked", async () => {
    const loaded = await loadWorkflowFile(join(WORKFLOW_FIXTURES, "tangled", "build.yml"), {
      nixeryBase: "nixery.dev",
      name: ".tangled/workflows/build.yml",
    });
    assert.equal(loaded.resolved.image, "nixery.dev/go/gcc/bash/git/coreutils/nix/gnutar/findutils/gnugrep/util-linux");
    assert.equal(loaded.resolved.steps[0]!.source, ".tangled/workflows/build.yml:14");
    assert.equal(loaded.parsed.engine, "nixery");
    assert.deepEqual(loaded.warnings, []);
  });

  it("rejects with a WorkflowError, an InputError, listing every problem of the file", async () => {
    const dir = makeTestTempDir("knotless-load-");
    writeFileSync(join(dir, "wf.yml"), "engine: nixery\nsteps:\n  - name: a\n");
    await assert.rejects(loadWorkflowFile(join(dir, "wf.yml"), { name: "wf.yml" }), (error: unknown) => {
      assert.ok(error instanceof WorkflowError && error instanceof InputError);
      assert.equal(error.message, "wf.yml:3:5: steps[0]: expected the key `command`, found none");
      return true;
    });
  });

  it("rejects with a WorkflowError when the file parses but cannot be resolved", async () => {
    await assert.rejects(
      loadWorkflowFile(join(WORKFLOW_FIXTURES, "tangled", "test.yml"), { name: "test.yml" }),
      /^InputError: test\.yml:5:1: engine: a nixery workflow's image is composed on the runner's Nixery registry/,
    );
  });

  it("rejects with an InputError naming a file it cannot read", async () => {
    await assert.rejects(
      loadWorkflowFile("/nonexistent/wf.yml"),
      (error: unknown) =>
        error instanceof InputError &&
        error.message === "/nonexistent/wf.yml: cannot read the file: no such file or directory",
    );
  });
});
