// Variables, $KNOTLESS_ENV, the shell and a secret, end to end through the library API and the fake kubectl's sandboxed pods.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { lstatSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { RunEvent } from "../../src/events/run-events.js";
import { createFakeCluster } from "../fixtures/fake-kubectl/harness.js";
import { makeWorkspace, runCli } from "../support/run-cli.js";
import { runWithKubectl } from "../support/run-library.js";

// The runner stages its files under the OS temp dir (knotless-runner-*); a private one lets the test read them all.
// (The fake cluster keeps its pods' volumes there too: that is the node's disk, not the runner's.)
const RUNNER_TMP = mkdtempSync(join(tmpdir(), "knotless-env-e2e-"));
process.env.TMPDIR = RUNNER_TMP;

const SECRET = { name: "API_TOKEN", value: "tok-'s3cr3t' $HOME `x`\\ é" };
const HOSTILE = `it's "$HOME" \`x\` \\ é\nline 2`;

/** The contents of every regular file under `dir`, links not followed (the staging dir links to the checkout). */
function readAllFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    const stat = lstatSync(path);
    if (stat.isDirectory()) return readAllFiles(path);
    return stat.isFile() ? [readFileSync(path, "utf8")] : [];
  });
}

/** The runner's own temp dirs. */
function runnerDirs(): string[] {
  return readdirSync(RUNNER_TMP)
    .filter((name) => name.startsWith("knotless-runner-"))
    .map((name) => join(RUNNER_TMP, name));
}

function assertNoSecret(texts: readonly string[], what: string): void {
  for (const text of texts)
    assert.ok(!text.includes(SECRET.value) && !text.includes("s3cr3t"), `${what} holds the secret`);
}

describe("the steps' environment through the fake kubectl", () => {
  it("hands every step the run's variables, the workflow's env, its own env, $KNOTLESS_ENV and the secret, none on a command line", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    const stagedSeen: string[] = [];
    const steps = [
      {
        name: "vars",
        script: [
          `printf '[%s]\\n' "$CI" "$KNOTLESS_RUN_ID" "$HOSTILE" "$LATER"`,
          `printf 'PLAIN=from vars\\n' >> "$KNOTLESS_ENV"`,
          `printf 'MULTI<<EOF\\nit'\\''s "$HOME"\\n  two\\nEOF\\n' >> "$KNOTLESS_ENV"`,
        ].join("\n"),
        source: "test:1",
      },
      {
        name: "carried",
        script: `printf '[%s]\\n' "$PLAIN" "$MULTI" "$OWN" "$LATER"; printf %s "$API_TOKEN" | sha256sum`,
        source: "test:2",
        env: [
          { name: "OWN", value: "own value" },
          { name: "LATER", value: "step wins" },
        ],
      },
      { name: "pipefail", script: "false | true\necho unreachable", source: "test:3" },
      { name: "never", script: "true", source: "test:4" },
    ];
    const run = await runWithKubectl({
      kubectlPath: cluster.kubectlPath,
      env: cluster.env,
      steps: "unused\ttrue",
      runId: "env-e2e",
      overrides: {
        steps,
        env: [
          { name: "CI", value: "true" },
          { name: "KNOTLESS_RUN_ID", value: "env-e2e" },
          { name: "HOSTILE", value: HOSTILE },
          { name: "LATER", value: "run" },
        ],
        secrets: [SECRET],
        shell: "bash -eo pipefail",
      },
      onEvent: (event: RunEvent) => {
        if (event.kind === "step-start" && event.index === 0) stagedSeen.push(...runnerDirs().flatMap(readAllFiles));
      },
    });
    assert.deepEqual(
      run.result.steps.map((s) => [s.name, s.status, s.exitCode]),
      [
        ["vars", "success", 0],
        ["carried", "success", 0],
        ["pipefail", "failed", 1],
        ["never", "skipped", null],
      ],
    );
    assert.equal(run.output(0), `[true]\n[env-e2e]\n[${HOSTILE}]\n[run]\n`);
    const digest = createHash("sha256").update(SECRET.value).digest("hex");
    assert.equal(run.output(1), `[from vars]\n[it's "$HOME"\n  two]\n[own value]\n[step wins]\n${digest}  -\n`);
    assert.equal(run.output(2), "", "bash -eo pipefail stopped at the failing pipe");

    const calls = await cluster.calls();
    const execs = calls
      .filter((call) => call.argv.includes("exec"))
      .map((call) => call.argv.slice(call.argv.indexOf("--") + 1).join(" "));
    assert.match(execs[0]!, /^sh -c .*\ntar -xf - -C \//s, "the upload is first: it beats, then extracts");
    assert.equal(execs[1], "sh /knotless/helper.sh secrets");
    assert.ok(calls.find((call) => call.argv.at(-1) === "secrets")!.stdinBytes > 0);
    assertNoSecret(
      calls.map((call) => call.argv.join(" ")),
      "a kubectl argv",
    );
    for (const call of calls)
      assert.ok(!call.argv.join(" ").includes("line 2"), "a variable's value is on a command line");
    const job = (await cluster.jobs())[0];
    assert.equal(job, undefined, "the Job is deleted");
    assert.ok(stagedSeen.length > 0, "the staging dir was read while the run had it");
    assertNoSecret(stagedSeen, "a file the runner staged");
    assertNoSecret(
      [JSON.stringify(run.result), JSON.stringify(run.events)],
      "the result or the events (what result.json and the logs are made of)",
    );
    assert.deepEqual(runnerDirs(), [], "the staging dir is removed");
  });

  it("through the CLI: a workflow's environment, --secrets and $KNOTLESS_ENV reach the steps, the secret only as *** in every file", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    const ws = makeWorkspace("");
    const workflow = join(ws.out, "..", "env.yml");
    const secrets = join(ws.out, "..", "secrets.env");
    writeFileSync(secrets, `API_TOKEN=cli-s3cr3t-value-42\n`, { mode: 0o600 });
    writeFileSync(
      workflow,
      [
        "shell: bash -eo pipefail",
        "environment:",
        '  GREETING: "it\'s $HOME"',
        "steps:",
        "  - name: first",
        "    command: |",
        '      echo "[$CI] [$KNOTLESS_RUN_ID] [$GREETING] [$API_TOKEN]"',
        "      echo 'FROM_FIRST=carried' >> \"$KNOTLESS_ENV\"",
        "  - name: second",
        "    environment:",
        "      OWN: mine",
        '    command: echo "[$FROM_FIRST] [$OWN] $(printf %s "$API_TOKEN" | wc -c)"',
        "",
      ].join("\n"),
    );
    const run = await runCli(
      [
        "run",
        "--workflow",
        workflow,
        "--checkout",
        ws.checkout,
        "--out",
        ws.out,
        "--secrets",
        secrets,
        "--run-id",
        "cli-env",
        "--transport",
        "kubectl",
        "--kubectl",
        cluster.kubectlPath,
        "--kubeconfig",
        cluster.kubeconfigPath,
      ],
      { env: cluster.env },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /\[true\] \[cli-env\] \[it's \$HOME\] \[\*\*\*\]/);
    assert.match(run.stdout, /\[carried\] \[mine\] 19/);
    const files = [
      run.stdout,
      run.stderr,
      ...["result.json", "run.log", "log.ndjson"].map((file) => readFileSync(join(ws.out, file), "utf8")),
    ];
    for (const text of files)
      assert.ok(!text.includes("cli-s3cr3t"), "the secret is in the CLI's output or a file of the run");
    const calls = await cluster.calls();
    assert.ok(
      calls.some((call) => call.argv.at(-1) === "secrets" && call.argv.includes("-i")),
      "the secrets exec",
    );
    for (const call of calls) assert.ok(!call.argv.join(" ").includes("cli-s3cr3t"), "a kubectl argv holds the secret");
  });
});
