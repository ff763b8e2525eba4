import assert from "node:assert/strict";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  checkWorkflowText,
  formatValidateReport,
  listWorkflowFiles,
  validateWorkflowPaths,
} from "../../src/settings/validate-files.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const GOOD = "steps:\n  - name: a\n    command: b\n";

function makeTree(): string {
  const dir = makeTestTempDir("knotless-validate-");
  writeFileSync(join(dir, "b.yml"), GOOD);
  writeFileSync(join(dir, "a.yaml"), GOOD);
  writeFileSync(join(dir, "notes.txt"), "not a workflow");
  mkdirSync(join(dir, "nested.yml"));
  mkdirSync(join(dir, "sub"));
  writeFileSync(join(dir, "sub", "deep.yml"), GOOD);
  symlinkSync(join(dir, "sub", "deep.yml"), join(dir, "link.yml"));
  mkdirSync(join(dir, "empty"));
  return dir;
}

describe("listWorkflowFiles", () => {
  it("takes every *.yml and *.yaml file directly in a directory, by name, following links, skipping directories", () => {
    const dir = makeTree();
    assert.deepEqual(listWorkflowFiles([dir]), {
      files: [`${dir}/a.yaml`, `${dir}/b.yml`, `${dir}/link.yml`],
      problems: [],
    });
  });

  it("takes a named file whatever its name, keeps the order given and lists each file once", () => {
    const dir = makeTree();
    assert.deepEqual(listWorkflowFiles([`${dir}/notes.txt`, `${dir}/`, `${dir}/b.yml`]).files, [
      `${dir}/notes.txt`,
      `${dir}/a.yaml`,
      `${dir}/b.yml`,
      `${dir}/link.yml`,
    ]);
  });

  it("reports a path that does not exist and a directory without workflow files", () => {
    const dir = makeTree();
    assert.deepEqual(listWorkflowFiles([`${dir}/missing.yml`, `${dir}/empty`, `${dir}/sub`]), {
      files: [`${dir}/sub/deep.yml`],
      problems: [
        `${dir}/missing.yml: no such file or directory`,
        `${dir}/empty: no workflow files (*.yml, *.yaml) in this directory`,
      ],
    });
  });
});

describe("checkWorkflowText", () => {
  it("gives the step count and engine of a good file", async () => {
    assert.deepEqual(await checkWorkflowText("engine: nixery\n" + GOOD, "w.yml"), {
      file: "w.yml",
      steps: 1,
      engine: "nixery",
      errors: [],
      warnings: [],
    });
  });

  it("accepts a nixery workflow although no Nixery registry is known: that is the runner's to say", async () => {
    assert.equal((await checkWorkflowText("dependencies:\n  nixpkgs: [go]\n" + GOOD, "w.yml")).errors.length, 0);
  });
});

describe("formatValidateReport", () => {
  it("prints an ok line per good file on stdout and nothing on stderr", async () => {
    const dir = makeTree();
    const output = formatValidateReport(await validateWorkflowPaths([`${dir}/a.yaml`, `${dir}/b.yml`]));
    assert.deepEqual(output, {
      stdout: `ok  ${dir}/a.yaml (1 step, engine kubernetes)\nok  ${dir}/b.yml (1 step, engine kubernetes)\n`,
      stderr: "",
      ok: true,
    });
  });

  it("prints every error of every bad file, every path problem, and a count, on stderr", async () => {
    const dir = makeTree();
    writeFileSync(join(dir, "bad.yml"), "stepz: []\n");
    writeFileSync(join(dir, "worse.yml"), "steps: [{name: a}, {command: b}]\n");
    const output = formatValidateReport(
      await validateWorkflowPaths([`${dir}/bad.yml`, `${dir}/a.yaml`, `${dir}/worse.yml`, `${dir}/gone`]),
    );
    assert.equal(output.ok, false);
    assert.equal(output.stdout, `ok  ${dir}/a.yaml (1 step, engine kubernetes)\n`);
    assert.equal(
      output.stderr,
      [
        `${dir}/gone: no such file or directory`,
        `${dir}/bad.yml:1:1: stepz: unknown key; did you mean \`steps\`?`,
        `${dir}/bad.yml:1:1: expected the key \`steps\`, found none`,
        `${dir}/worse.yml:1:9: steps[0]: expected the key \`command\`, found none`,
        `${dir}/worse.yml:1:20: steps[1]: expected the key \`name\`, found none`,
        "validate: 4 errors in 2 of 3 files, 1 path with nothing to check",
        "",
      ].join("\n"),
    );
  });

  it("prints warnings on stderr without failing", async () => {
    const output = formatValidateReport({
      checks: [await checkWorkflowText("when:\n  - event: push\n" + GOOD, "w.yml")],
      pathProblems: [],
    });
    assert.equal(output.ok, true);
    assert.match(output.stderr, /^w\.yml:2:5: warning: when\[0\]: lists no `branch` or `tag`/);
  });

  it("fails when there was nothing to check at all", () => {
    assert.deepEqual(formatValidateReport({ checks: [], pathProblems: ["x: no such file or directory"] }), {
      stdout: "",
      stderr: "x: no such file or directory\nvalidate: 1 path with nothing to check\n",
      ok: false,
    });
  });
});

describe("validate on caches and artifacts", () => {
  it("reports every problem of the caches and artifacts, key syntax, variables and paths alike, and fails", async () => {
    const text = [
      "caches:",
      `  - key: 'deps-{{ hashFiles "lock" }'`,
      "    paths: /knotless",
      "  - key: 'x-{{ KNOTLESS_BRANCH }}'",
      "    paths: ok",
      "artifacts:",
      "  - name: a/b",
      "    paths: /tmp/x",
      GOOD,
    ].join("\n");
    const report = formatValidateReport({ checks: [await checkWorkflowText(text, "ci.yml")], pathProblems: [] });
    assert.equal(report.ok, false);
    assert.deepEqual(
      report.stderr.split("\n").map((line) => line.split(": ").slice(0, 2).join(": ")),
      [
        "ci.yml:2:10: caches[0].key",
        "ci.yml:3:12: caches[0].paths",
        "ci.yml:4:10: caches[1].key",
        "ci.yml:7:11: artifacts[0].name",
        "ci.yml:8:12: artifacts[0].paths",
        "validate: 5 errors in 1 of 1 file",
        "",
      ],
    );
  });
});
