// End to end: `run --workflow` through the real CLI and the fake kubectl: the trigger's match, Tangled files, bad input.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { createFakeCluster, type FakeCluster } from "../fixtures/fake-kubectl/harness.js";
import { makeWorkspace, readResult, REPO_ROOT, runCli } from "../support/run-cli.js";

const WORKFLOWS = join(REPO_ROOT, "test", "fixtures", "workflows");

async function withCluster(t: { after: (fn: () => Promise<void>) => void }): Promise<FakeCluster> {
  const cluster = await createFakeCluster();
  t.after(() => cluster.cleanup());
  return cluster;
}

function workflowArgs(
  cluster: FakeCluster,
  workflow: string,
  ws: ReturnType<typeof makeWorkspace>,
  extra: string[] = [],
): string[] {
  return [
    "run",
    "--workflow",
    workflow,
    "--checkout",
    ws.checkout,
    "--out",
    ws.out,
    "--transport",
    "kubectl",
    "--kubectl",
    cluster.kubectlPath,
    "--kubeconfig",
    cluster.kubeconfigPath,
    ...extra,
  ];
}

describe("run --workflow with the fake kubectl", { concurrency: 2 }, () => {
  it("does not run a workflow whose `when` does not match: exit 0, result skipped with the reason, no kubectl call", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace("");
    const run = await runCli(
      workflowArgs(cluster, join(WORKFLOWS, "tangled", "build.yml"), ws, [
        "--event",
        "push",
        "--ref",
        "refs/heads/dev",
        "--nixery",
        "nixery.dev",
      ]),
      { env: cluster.env },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stderr,
      /does not run for this trigger: no constraint of when matched: branch "dev" is not one of master/,
    );
    const result = readResult(ws.out);
    assert.equal(result.status, "skipped");
    assert.equal(result.exitCode, 0);
    assert.deepEqual(
      result.steps.map((step) => [step.name, step.status]),
      [
        ["patch static dir", "skipped"],
        ["build appview", "skipped"],
        ["build knot", "skipped"],
      ],
    );
    assert.equal(result.workflow?.trigger?.matched, false);
    assert.deepEqual(await cluster.calls(), []);
  });

  it("runs a Tangled workflow without engine on the runner's image when the trigger matches, recording the workflow and trigger", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace("");
    const run = await runCli(
      workflowArgs(cluster, join(WORKFLOWS, "plain-image.yml"), ws, [
        "--event",
        "push",
        "--branch",
        "main",
        "--sha",
        "abc123",
      ]),
      { env: cluster.env },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /hello from Linux/);
    const result = readResult(ws.out);
    assert.equal(result.status, "success");
    assert.deepEqual(
      result.steps.map((step) => [step.name, step.status]),
      [["hello", "success"]],
    );
    assert.deepEqual(result.workflow?.trigger, {
      event: "push",
      branch: "main",
      sha: "abc123",
      matched: true,
      reason: 'when[0] matched: event "push", branch "main" ("*")',
    });
    assert.equal(result.workflow?.imageFrom, "default");
    assert.deepEqual(await cluster.jobs(), []);
  });

  it("gives a step the workflow's timeout and stops it there, and the run's timeout from the file", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace("");
    const file = join(ws.out, "..", "slow.yml");
    writeFileSync(
      file,
      [
        "timeout: 5m",
        "steps:",
        "  - name: slow",
        "    timeout: 2s",
        "    command: sleep 30",
        "  - name: never",
        "    command: echo never",
        "",
      ].join("\n"),
    );
    const run = await runCli(workflowArgs(cluster, file, ws), { env: cluster.env, timeoutMs: 60_000 });
    assert.equal(run.code, 1, run.stderr);
    const result = readResult(ws.out);
    assert.deepEqual(
      result.steps.map((step) => [step.name, step.status, step.timedOut]),
      [
        ["slow", "timeout", true],
        ["never", "skipped", false],
      ],
    );
    assert.ok(result.steps[0]!.durationMs < 20_000, `the step ran ${result.steps[0]!.durationMs} ms`);
  });

  const badInput: Array<{ name: string; args: (workflow: string) => string[]; message: RegExp }> = [
    {
      name: "a workflow with typos, every error with file:line:column",
      args: () => ["--workflow", join(WORKFLOWS, "bad", "typos.yml")],
      message: /typos\.yml:\d+:\d+: .*did you mean/,
    },
    {
      name: "a duplicate step name",
      args: () => ["--workflow", join(WORKFLOWS, "bad", "registry.yml")],
      message: /registry\.yml:9:11: steps\[1\]\.name: duplicate step name/,
    },
    {
      name: "a nixery workflow without --nixery",
      args: () => ["--workflow", join(WORKFLOWS, "tangled", "build.yml")],
      message: /build\.yml:6:3: dependencies\.nixpkgs: .*pass --nixery URL/,
    },
    {
      name: "both --steps and --workflow",
      args: (workflow) => ["--workflow", workflow, "--steps", workflow],
      message: /exactly one of --steps FILE and --workflow FILE/,
    },
    {
      name: "neither --steps nor --workflow",
      args: () => [],
      message: /exactly one of --steps FILE and --workflow FILE/,
    },
    {
      name: "--ref without --event",
      args: (workflow) => ["--workflow", workflow, "--ref", "refs/heads/main"],
      message: /--ref describes a trigger: give --event too/,
    },
    {
      name: "--config with a steps file",
      args: (workflow) => ["--steps", workflow, "--config", workflow],
      message: /--config goes with --workflow/,
    },
    {
      name: "--ref that is not a full ref",
      args: (workflow) => ["--workflow", workflow, "--event", "push", "--ref", "main"],
      message: /--ref expects a full ref/,
    },
    {
      name: "a secrets file with an empty value",
      args: (workflow) => ["--workflow", workflow, "--secrets", "EMPTY"],
      message: /empty/,
    },
  ];
  for (const { name, args, message } of badInput) {
    it(`refuses ${name} as bad input: exit 2, the message, no kubectl call`, async (t) => {
      const cluster = await withCluster(t);
      const ws = makeWorkspace("");
      const empty = join(ws.out, "..", "empty.env");
      writeFileSync(empty, "TOKEN=\n", { mode: 0o600 });
      const argv = args(join(WORKFLOWS, "plain-image.yml")).map((arg) => (arg === "EMPTY" ? empty : arg));
      const run = await runCli(
        [
          "run",
          ...argv,
          "--checkout",
          ws.checkout,
          "--out",
          ws.out,
          "--transport",
          "kubectl",
          "--kubectl",
          cluster.kubectlPath,
          "--kubeconfig",
          cluster.kubeconfigPath,
        ],
        { env: cluster.env },
      );
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, message);
      assert.deepEqual(await cluster.calls(), []);
    });
  }

  it("refuses a workflow path that is a device, a named pipe, a directory or over 1 MiB, saying which: exit 2, no kubectl call", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace("");
    const dir = join(ws.out, "..", "odd");
    mkdirSync(dir);
    execFileSync("mkfifo", [join(dir, "pipe.yml")]);
    writeFileSync(join(dir, "big.yml"), "#".repeat(1024 * 1024 + 1));
    const cases: Array<[string, string]> = [
      [
        "/dev/zero",
        "/dev/zero: not a regular file but a character device; a workflow file is a regular file of at most 1 MiB",
      ],
      [
        join(dir, "pipe.yml"),
        `${dir}/pipe.yml: not a regular file but a named pipe (FIFO); a workflow file is a regular file of at most 1 MiB`,
      ],
      [dir, `${dir}: not a regular file but a directory; a workflow file is a regular file of at most 1 MiB`],
      [
        join(dir, "big.yml"),
        `${dir}/big.yml: 1048577 bytes, more than the 1 MiB (1048576 bytes) a workflow file may have`,
      ],
    ];
    for (const [workflow, message] of cases) {
      const run = await runCli(workflowArgs(cluster, workflow, ws), { env: cluster.env, timeoutMs: 20_000 });
      assert.equal(run.code, 2, run.stderr);
      assert.equal(run.stderr, `knotless-runner-k8s: ${message}\n`);
    }
    assert.deepEqual(await cluster.calls(), []);
  });

  it("evaluates when.paths against --changed-file and --changed-files, says in the dry run when it assumed them, and checks the flags", async () => {
    const ws = makeWorkspace("");
    const dir = join(ws.out, "..");
    const workflow = join(dir, "paths.yml");
    writeFileSync(
      workflow,
      "when:\n  - event: [push, pull_request]\n    branch: main\n    paths: ['src/**']\n    types: [opened, closed]\nsteps:\n  - name: a\n    command: echo a\n",
    );
    writeFileSync(join(dir, "changed.txt"), "README.md\nsrc/lib/a.ts\n");
    const dry = (extra: string[]) =>
      runCli([
        "run",
        "--workflow",
        workflow,
        "--checkout",
        ws.checkout,
        "--out",
        ws.out,
        "--namespace",
        "ci",
        "--dry-run",
        ...extra,
      ]);
    const assumed = await dry(["--event", "push", "--branch", "main"]);
    assert.equal(assumed.code, 0, assumed.stderr);
    assert.match(
      assumed.stdout,
      /# {3}trigger: event push, branch main: matches \(when\[0\] matched: event "push", branch "main", paths assumed to match: the trigger gave no changed files \(--changed-file\)\)/,
    );
    assert.match(assumed.stdout, /# {3}clone: the checkout is uploaded to \/work, submodules yes, tags yes/);
    const missed = await dry([
      "--event",
      "push",
      "--branch",
      "main",
      "--changed-file",
      "README.md",
      "--changed-file",
      "docs/x.md",
    ]);
    assert.match(
      missed.stdout,
      /2 changed files: does not match \(no constraint of when matched: none of the 2 changed files matches paths src\/\*\*\)/,
    );
    const listed = await dry([
      "--event",
      "pull_request",
      "--branch",
      "main",
      "--pr-action",
      "closed",
      "--changed-files",
      join(dir, "changed.txt"),
    ]);
    assert.match(
      listed.stdout,
      /action closed, 2 changed files: matches \(when\[0\] matched: event "pull_request", branch "main", action "closed", changed file "src\/lib\/a\.ts" \("src\/\*\*"\)\)/,
    );
    for (const [extra, message] of [
      [["--changed-file", "src/a"], /--changed-file describes a trigger: give --event too/],
      [["--event", "push", "--branch", "main", "--pr-action", "closed"], /--pr-action goes with --event pull_request/],
      [
        ["--event", "pull_request", "--branch", "main", "--pr-action", "close"],
        /--pr-action expects one of opened, reopened, synchronize, closed, merged, got "close"/,
      ],
      [
        ["--event", "push", "--branch", "main", "--changed-files", join(dir, "missing.txt")],
        /--changed-files: .*missing\.txt: cannot read the file: no such file or directory/,
      ],
      [
        ["--event", "push", "--branch", "main", "--changed-files", "/dev/zero"],
        /--changed-files: \/dev\/zero: not a regular file but a character device; a list of changed files is a regular file of at most 16 MiB/,
      ],
    ] as const) {
      const run = await dry([...extra]);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, message);
    }
  });

  it("prints the resolved workflow in the dry run: image, trigger, step timeouts, variables and secrets by name only", async () => {
    const ws = makeWorkspace("");
    const secrets = join(ws.out, "..", "secrets.env");
    writeFileSync(secrets, "API_TOKEN=do-not-print-me-42\n", { mode: 0o600 });
    const run = await runCli([
      "run",
      "--workflow",
      join(WORKFLOWS, "maximal.yml"),
      "--checkout",
      ws.checkout,
      "--out",
      ws.out,
      "--secrets",
      secrets,
      "--event",
      "push",
      "--branch",
      "main",
      "--dry-run",
      "--namespace",
      "ci",
    ]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /# {3}workflow: .*maximal\.yml/);
    assert.match(run.stdout, /# {3}trigger: event push, branch main: /);
    assert.match(run.stdout, /# {3}secrets \(masked in all output, never shown\): API_TOKEN/);
    assert.match(run.stdout, /# {3}step 1: /);
    assert.doesNotMatch(run.stdout + run.stderr, /do-not-print-me-42/);
    assert.match(readFileSync(join(WORKFLOWS, "maximal.yml"), "utf8"), /timeout/);
  });
});

describe("secrets through run --workflow with the fake kubectl", () => {
  it("never lets a secret, in any of its forms, reach --out, the console, a kubectl argument list or the dry run", async (t) => {
    const cluster = await withCluster(t);
    const ws = makeWorkspace("");
    const secret = "s3cr3t-Value/with+base64_chars!";
    const multi = "first-line-secret\nsecond-line-secret";
    const secretsFile = join(ws.out, "..", "secrets.env");
    writeFileSync(secretsFile, `API_TOKEN=${secret}\nMULTI="${multi.replace("\n", "\\n")}"\n`, { mode: 0o600 });
    const workflow = join(ws.out, "..", "leak.yml");
    writeFileSync(
      workflow,
      [
        "steps:",
        "  - name: print",
        "    command: |",
        '      echo "plain: $API_TOKEN"',
        '      printf %s "$API_TOKEN" | base64 -w0; echo',
        '      printf %s "$API_TOKEN" | base64 -w0 | tr "+/" "-_" | tr -d =; echo',
        '      printf "xy%s" "$API_TOKEN" | base64 -w0; echo',
        '      printf "x%sz" "$API_TOKEN" | base64 -w0; echo',
        '      echo "$MULTI"',
        '      printf %s "$API_TOKEN" | while IFS= read -r -n1 c 2>/dev/null || [ -n "$c" ]; do printf %s "$c"; sleep 0.01; done; echo',
        '      i=0; while [ $i -lt ${#API_TOKEN} ]; do printf %s "$(printf %s "$API_TOKEN" | cut -c$((i+1)))"; sleep 0.02; i=$((i+1)); done; echo',
        '      echo "$API_TOKEN" >&2',
        "      echo done",
        "",
      ].join("\n"),
    );
    const run = await runCli(workflowArgs(cluster, workflow, ws, ["--secrets", secretsFile]), { env: cluster.env });
    const dry = await runCli([
      "run",
      "--workflow",
      workflow,
      "--checkout",
      ws.checkout,
      "--out",
      `${ws.out}-dry`,
      "--secrets",
      secretsFile,
      "--dry-run",
      "--namespace",
      "ci",
    ]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(run.stdout, /plain: \*\*\*/, "the step saw the secret (and its output was masked)");
    assert.match(run.stdout, /done/);
    const { buildSecretForms } = await import("../../src/secrets/secret-forms.js");
    const forms = buildSecretForms([secret, multi]);
    assert.ok(forms.length >= 10, `${forms.length} forms`);
    const { readdirSync, statSync } = await import("node:fs");
    const files: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else files.push(path);
      }
    };
    walk(ws.out);
    assert.ok(
      files.some((file) => file.endsWith("run.log")) &&
        files.some((file) => file.endsWith("log.ndjson")) &&
        files.some((file) => file.endsWith("result.json")),
    );
    const haystacks: Array<[string, string]> = [
      ["stdout", run.stdout],
      ["stderr", run.stderr],
      ["dry run", dry.stdout + dry.stderr],
      ["kubectl argv", JSON.stringify((await cluster.calls()).map((call) => call.argv))],
      ...files.map((file): [string, string] => [file, readFileSync(file, "latin1")]),
    ];
    for (const [where, text] of haystacks) {
      for (const form of forms)
        assert.ok(!text.includes(form), `${where} holds the secret form ${JSON.stringify(form.slice(0, 4))}…`);
    }
  });
});
