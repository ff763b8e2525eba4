// Runs `knotless-runner-k8s validate` itself (bin/knotless-runner-k8s.js, the bundled CLI), with a kubectl that records any call.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runCliInProcess } from "../support/run-cli.js";
import { makeTestTempDir } from "../support/temp-dir.js";
import { WORKFLOW_FIXTURES } from "./workflow-fixtures.js";

/** A kubectl on PATH and in KNOTLESS_KUBECTL that leaves a file behind if anything ever calls it. */
function makeTrapKubectl(): { env: Record<string, string>; called: () => boolean } {
  const dir = makeTestTempDir("knotless-validate-bin-");
  const marker = join(dir, "kubectl-was-called");
  const kubectl = join(dir, "kubectl");
  writeFileSync(kubectl, `#!/bin/sh\necho "$@" >> ${marker}\nexit 1\n`);
  chmodSync(kubectl, 0o755);
  return {
    env: { PATH: `${dir}:${process.env.PATH ?? ""}`, KNOTLESS_KUBECTL: kubectl },
    called: () => existsSync(marker),
  };
}

describe("knotless-runner-k8s validate", () => {
  it("exits 0 for Tangled's own files in a directory, with an ok line for each, and calls no kubectl", async () => {
    const trap = makeTrapKubectl();
    const dir = join(WORKFLOW_FIXTURES, "tangled");
    const run = await runCliInProcess(["validate", dir], { env: trap.env });
    assert.equal(run.stderr, "");
    assert.equal(
      run.stdout,
      [
        `ok  ${dir}/build.yml (3 steps, engine nixery)`,
        `ok  ${dir}/fmt.yaml (2 steps, engine nixery)`,
        `ok  ${dir}/release.yml (3 steps, engine nixery)`,
        `ok  ${dir}/test.yml (3 steps, engine nixery)`,
        "",
      ].join("\n"),
    );
    assert.equal(run.code, 0);
    assert.equal(trap.called(), false);
  });

  it("exits 0 for named files, the maximal one included", async () => {
    const run = await runCliInProcess([
      "validate",
      join(WORKFLOW_FIXTURES, "maximal.yml"),
      join(WORKFLOW_FIXTURES, "plain-image.yml"),
    ]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stdout,
      /^ok {2}\S+\/maximal\.yml \(2 steps, engine kubernetes\)\nok {2}\S+\/plain-image\.yml \(1 step, engine kubernetes\)\n$/,
    );
  });

  it("exits 2 listing every error of every bad file, and still an ok line for the good one", async () => {
    const trap = makeTrapKubectl();
    const bad = join(WORKFLOW_FIXTURES, "bad");
    const good = join(WORKFLOW_FIXTURES, "tangled", "test.yml");
    const run = await runCliInProcess(["validate", bad, good], { env: trap.env });
    assert.equal(run.code, 2);
    assert.equal(run.stdout, `ok  ${good} (3 steps, engine nixery)\n`);
    assert.equal(
      run.stderr,
      [
        `${bad}/not-yaml.yaml:3:1: invalid YAML: Sequence item without - indicator`,
        `${bad}/registry.yml:9:11: steps[1].name: duplicate step name "lint", already used by steps[0] at ${bad}/registry.yml:7:11; logs and results tell steps apart by name`,
        `${bad}/typos.yml:3:5: when[0].branhc: unknown key; did you mean \`branch\`?`,
        `${bad}/typos.yml:4:1: enviroment: unknown key; did you mean \`environment\`?`,
        `${bad}/typos.yml:7:5: steps[0]: expected the key \`command\`, found none`,
        `${bad}/typos.yml:8:5: steps[0].comand: unknown key; did you mean \`command\`?`,
        `${bad}/typos.yml:2:5: warning: when[0]: lists no \`branch\` or \`tag\`, so it matches no push or pull request (a push must match by branch or tag, a pull request by its target branch)`,
        "validate: 6 errors in 3 of 4 files",
        "",
      ].join("\n"),
    );
    assert.equal(trap.called(), false);
  });

  it("exits 2 for a path that does not exist and for a directory without workflow files", async () => {
    const empty = makeTestTempDir("knotless-validate-empty-");
    const run = await runCliInProcess(["validate", "/nonexistent/wf.yml", empty]);
    assert.equal(run.code, 2);
    assert.equal(run.stdout, "");
    assert.equal(
      run.stderr,
      `/nonexistent/wf.yml: no such file or directory\n${empty}: no workflow files (*.yml, *.yaml) in this directory\nvalidate: 2 paths with nothing to check\n`,
    );
  });

  it("refuses at once a device, a named pipe, a file over 1 MiB and a step name that is not UTF-8, each saying why, calling no kubectl", async () => {
    const trap = makeTrapKubectl();
    const dir = makeTestTempDir("knotless-validate-odd-");
    execFileSync("mkfifo", [join(dir, "pipe.yml")]);
    writeFileSync(join(dir, "big.yml"), "#".repeat(1024 * 1024 + 1));
    writeFileSync(
      join(dir, "latin1.yml"),
      Buffer.concat([Buffer.from("steps:\n  - name: b"), Buffer.from([0xe2]), Buffer.from("tir\n    command: make\n")]),
    );
    const started = Date.now();
    const run = await runCliInProcess(
      ["validate", "/dev/zero", join(dir, "pipe.yml"), join(dir, "big.yml"), join(dir, "latin1.yml")],
      { env: trap.env, timeoutMs: 60_000 },
    );
    // Reading /dev/zero or waiting on the fifo it would never answer; 20 s is what a busy machine cannot add.
    assert.ok(Date.now() - started < 20_000, "answered at once");
    assert.equal(run.code, 2);
    assert.equal(run.stdout, "");
    assert.equal(
      run.stderr,
      [
        "/dev/zero:1:1: not a regular file but a character device; a workflow file is a regular file of at most 1 MiB",
        `${dir}/pipe.yml:1:1: not a regular file but a named pipe (FIFO); a workflow file is a regular file of at most 1 MiB`,
        `${dir}/big.yml:1:1: 1048577 bytes, more than the 1 MiB (1048576 bytes) a workflow file may have`,
        `${dir}/latin1.yml:2:12: expected UTF-8 text, found the byte 0xe2 that is not UTF-8 here`,
        "validate: 4 errors in 4 of 4 files",
        "",
      ].join("\n"),
    );
    assert.equal(trap.called(), false);
  });

  it("exits 2 saying what it expects when neither a path nor --config is given", async () => {
    const run = await runCliInProcess(["validate"]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /validate expects workflow files or directories, or --config FILE/);
  });

  it("checks --config alone, and workflow files against its limits: errors at their positions, clamps as warnings", async () => {
    const dir = makeTestTempDir("knotless-validate-config-");
    const refuse = join(dir, "refuse.yml");
    writeFileSync(refuse, "limits: {maxCpu: 2}\n");
    const clamp = join(dir, "clamp.yml");
    writeFileSync(clamp, "limits: {maxCpu: 2, onExceed: clamp}\n");
    const bad = join(dir, "bad.yml");
    writeFileSync(bad, "limits: {maxCpu: 100000, onExceed: never}\n");
    const workflow = join(dir, "wf.yml");
    writeFileSync(workflow, "resources: {cpu: 4}\nsteps: [{name: a, command: b}]\n");

    const alone = await runCliInProcess(["validate", "--config", clamp]);
    assert.deepEqual([alone.code, alone.stdout, alone.stderr], [0, `ok  ${clamp} (runner configuration)\n`, ""]);

    const refused = await runCliInProcess(["validate", "--config", refuse, workflow]);
    assert.equal(refused.code, 2);
    assert.equal(refused.stdout, `ok  ${refuse} (runner configuration)\n`);
    assert.match(
      refused.stderr,
      new RegExp(
        `^${workflow}:1:18: resources\\.cpu: 4 is over limits\\.maxCpu 2 in --config ${refuse}; ask for at most 2`,
        "m",
      ),
    );

    const clamped = await runCliInProcess(["validate", "--config", clamp, workflow]);
    assert.equal(clamped.code, 0, clamped.stderr);
    assert.match(
      clamped.stderr,
      new RegExp(
        `^${workflow}:1:18: warning: resources\\.cpu: 4 is over limits\\.maxCpu 2 in --config ${clamp}: clamped to 2`,
        "m",
      ),
    );

    const broken = await runCliInProcess(["validate", "--config", bad, workflow]);
    assert.equal(broken.code, 2);
    assert.equal(broken.stdout, `ok  ${workflow} (1 step, engine kubernetes)\n`);
    assert.match(broken.stderr, new RegExp(`^${bad}:1:18: limits\\.maxCpu: cpu 100000 is outside the bounds`, "m"));
    assert.match(broken.stderr, new RegExp(`^${bad}:1:36: limits\\.onExceed: expected refuse or clamp`, "m"));
  });
});
