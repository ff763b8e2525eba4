import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { MAX_WORKFLOW_FILE_BYTES, readWorkflowFile } from "../../src/workflow/read-workflow-file.js";
import { makeTestTempDir } from "../support/temp-dir.js";

describe("readWorkflowFile", () => {
  it("reads a regular UTF-8 file as its text", () => {
    const dir = makeTestTempDir("knotless-read-wf-");
    writeFileSync(join(dir, "wf.yml"), "steps:\n  - name: bâtir\n    command: make\n");
    assert.deepEqual(readWorkflowFile(join(dir, "wf.yml")), {
      ok: true,
      text: "steps:\n  - name: bâtir\n    command: make\n",
    });
  });

  it("refuses a character device such as /dev/zero at once, without reading it", () => {
    assert.deepEqual(readWorkflowFile("/dev/zero"), {
      ok: false,
      problem: "not a regular file but a character device; a workflow file is a regular file of at most 1 MiB",
    });
  });

  it("refuses a named pipe without blocking on it", () => {
    const dir = makeTestTempDir("knotless-read-wf-");
    execFileSync("mkfifo", [join(dir, "pipe.yml")]);
    assert.deepEqual(readWorkflowFile(join(dir, "pipe.yml")), {
      ok: false,
      problem: "not a regular file but a named pipe (FIFO); a workflow file is a regular file of at most 1 MiB",
    });
  });

  it("refuses a directory", () => {
    const dir = makeTestTempDir("knotless-read-wf-");
    assert.deepEqual(readWorkflowFile(dir), {
      ok: false,
      problem: "not a regular file but a directory; a workflow file is a regular file of at most 1 MiB",
    });
  });

  it("refuses a file one byte over 1 MiB and reads one of exactly 1 MiB", () => {
    const dir = makeTestTempDir("knotless-read-wf-");
    writeFileSync(join(dir, "big.yml"), "#".repeat(MAX_WORKFLOW_FILE_BYTES + 1));
    writeFileSync(join(dir, "fits.yml"), "#".repeat(MAX_WORKFLOW_FILE_BYTES));
    assert.deepEqual(readWorkflowFile(join(dir, "big.yml")), {
      ok: false,
      problem: "1048577 bytes, more than the 1 MiB (1048576 bytes) a workflow file may have",
    });
    assert.equal(readWorkflowFile(join(dir, "fits.yml")).ok, true);
  });

  it("refuses bytes that are not UTF-8, pointing at the first of them (a step name in Latin-1 here)", () => {
    const dir = makeTestTempDir("knotless-read-wf-");
    writeFileSync(
      join(dir, "latin1.yml"),
      Buffer.concat([Buffer.from("steps:\n  - name: b"), Buffer.from([0xe2]), Buffer.from("tir\n    command: make\n")]),
    );
    assert.deepEqual(readWorkflowFile(join(dir, "latin1.yml")), {
      ok: false,
      problem: "expected UTF-8 text, found the byte 0xe2 that is not UTF-8 here",
      at: { line: 2, column: 12 },
    });
  });

  it("says a file that does not exist cannot be read", () => {
    assert.deepEqual(readWorkflowFile("/nonexistent/wf.yml"), {
      ok: false,
      problem: "cannot read the file: no such file or directory",
    });
  });
});
