// End to end: workflow files on the local Debian image (bash, GNU tools) through the real CLI (the api transport, its default) and podman:
// pipefail, variables, a secret, a step's timeout and $KNOTLESS_ENV.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason } from "../support/local-cluster-e2e.js";
import { makeWorkspace, readResult, runCli, type CliRun } from "../support/run-cli.js";

const KUBECTL = E2E_KUBECTLS.at(-1) ?? "kubectl";
const DEBIAN_IMAGE = "docker.io/library/debian:bookworm-slim";
const SECRET = "debian-s3cr3t-Value/42";

function findSkipReason(): string | false {
  const podman = findPodmanSkipReason();
  if (podman) return podman;
  const debian = spawnSync("podman", ["image", "exists", DEBIAN_IMAGE], { stdio: "ignore" }).status === 0;
  return debian
    ? false
    : `the local ${DEBIAN_IMAGE} image is not there (scripts/setup-containers.sh builds it with debootstrap)`;
}

/** A workflow file on the Debian image with `shell`, workflow-level variables and these steps (YAML lines). */
function writeWorkflow(dir: string, name: string, shell: string, steps: readonly string[]): string {
  const file = join(dir, `${name}.yml`);
  writeFileSync(
    file,
    [
      "engine: kubernetes",
      `image: ${DEBIAN_IMAGE}`,
      `shell: ${shell}`,
      "environment:",
      "  WF_VAR: from the workflow",
      "  SHARED: workflow",
      "steps:",
      ...steps,
      "",
    ].join("\n"),
  );
  return file;
}

describe("workflow files on the local Debian image", { skip: findSkipReason(), timeout: 600_000 }, () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await startLocalCluster({ namespace: "ci" });
  });
  after(async () => {
    await cluster?.stop();
  });

  it("runs bash -eo pipefail steps: variables, a masked secret, $KNOTLESS_ENV, a failing pipeline, a step's timeout; sh -e lets the pipeline pass", async () => {
    const ws = makeWorkspace("");
    const dir = join(ws.out, "..");
    const secrets = join(dir, "secrets.env");
    writeFileSync(secrets, `API_TOKEN=${SECRET}\n`, { mode: 0o600 });
    const pipefail = writeWorkflow(dir, "pipefail", "bash -eo pipefail", [
      "  - name: vars",
      "    environment:",
      "      STEP_VAR: from the step",
      "      SHARED: step",
      "    command: |",
      '      echo "shell: bash ${BASH_VERSINFO[0]}, pipefail $(set -o | grep -E "^pipefail" | tr -s " \\t" " ")"',
      '      for name in CI KNOTLESS_RUN_ID KNOTLESS_WORKFLOW KNOTLESS_EVENT KNOTLESS_REF KNOTLESS_REF_NAME KNOTLESS_SHA KNOTLESS_REPO KNOTLESS_OUTPUTS WF_VAR STEP_VAR SHARED; do echo "$name=${!name}"; done',
      '      echo "secret: $API_TOKEN"',
      '      printf %s "$API_TOKEN" | sha256sum',
      '      echo "PASSED=from step 1, it\'s \\"quoted\\" \\$HOME" >> "$KNOTLESS_ENV"',
      "  - name: carried",
      "    command: |",
      '      echo "carried: $PASSED"',
      '      echo "shared: $SHARED"',
      "  - name: pipeline",
      "    command: |",
      "      false | true",
      "      echo unreachable",
      "  - name: never",
      "    command: echo never",
    ]);
    const timeout = writeWorkflow(dir, "timeout", "bash -eo pipefail", [
      "  - name: sleeper",
      "    timeout: 5s",
      "    command: echo sleeping; sleep 300",
      "  - name: never",
      "    command: echo never",
    ]);
    const plain = writeWorkflow(dir, "plain-sh", "sh -e", [
      "  - name: pipeline",
      "    command: |",
      "      false | true",
      '      echo "sh -e went on"',
    ]);
    const trigger = ["--event", "push", "--ref", "refs/heads/main", "--sha", "abc123", "--repo", "did:plc:xyz/knot"];
    const run = (workflow: string, runId: string): Promise<CliRun> =>
      runCli(
        [
          "run",
          "--workflow",
          workflow,
          "--checkout",
          ws.checkout,
          "--out",
          join(dir, runId),
          "--run-id",
          runId,
          "--kubeconfig",
          cluster.kubeconfigPath,
          "--kubectl",
          KUBECTL,
          "--secrets",
          secrets,
          ...trigger,
        ],
        { timeoutMs: 400_000 },
      );
    // At once: each run is its own Job, and the pods' start-up is most of each run's time.
    const [a, b, c] = await Promise.all([
      run(pipefail, "deb-pipefail"),
      run(timeout, "deb-timeout"),
      run(plain, "deb-sh"),
    ]);

    // bash -eo pipefail: the variables in their order of precedence, the secret, $KNOTLESS_ENV, then the failing pipeline.
    const pipefailResult = readResult(join(dir, "deb-pipefail"));
    assert.equal(a.code, 1, a.stderr);
    assert.deepEqual(
      pipefailResult.steps.map((step) => [step.name, step.status, step.exitCode]),
      [
        ["vars", "success", 0],
        ["carried", "success", 0],
        ["pipeline", "failed", 1],
        ["never", "skipped", null],
      ],
    );
    assert.equal(pipefailResult.job.image, DEBIAN_IMAGE);
    assert.match(a.stdout, /^shell: bash 5, pipefail pipefail on$/m);
    const expected = [
      "CI=true",
      "KNOTLESS_RUN_ID=deb-pipefail",
      "KNOTLESS_WORKFLOW=pipefail.yml",
      "KNOTLESS_EVENT=push",
      "KNOTLESS_REF=refs/heads/main",
      "KNOTLESS_REF_NAME=main",
      "KNOTLESS_SHA=abc123",
      "KNOTLESS_REPO=did:plc:xyz/knot",
      "KNOTLESS_OUTPUTS=/outputs",
      "WF_VAR=from the workflow",
      "STEP_VAR=from the step",
      "SHARED=step",
    ];
    for (const line of expected)
      assert.match(
        a.stdout,
        new RegExp(`^${line.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}$`, "m"),
        `the step saw ${line}`,
      );
    assert.match(a.stdout, /^secret: \*\*\*$/m, "the secret reached the step and was masked");
    assert.match(
      a.stdout,
      new RegExp(`^${createHash("sha256").update(SECRET).digest("hex")}  -$`, "m"),
      "the step had the secret byte for byte",
    );
    assert.match(a.stdout, /^carried: from step 1, it's "quoted" \$HOME$/m);
    assert.match(a.stdout, /^shared: workflow$/m, "the step's own SHARED stayed with its step");
    assert.doesNotMatch(a.stdout, /^unreachable$|^never$/m);
    for (const file of ["run.log", "log.ndjson", "result.json"])
      assert.ok(!readFileSync(join(dir, "deb-pipefail", file), "utf8").includes(SECRET), `${file} holds the secret`);
    assert.match(readFileSync(join(dir, "deb-pipefail", "run.log"), "utf8"), /secret: \*\*\*/);

    // A step's timeout ends the sleeping step: status timeout, the CLI's exit code 1 (a step failed or timed out), the
    // result's -1 (no step exit code: the runner stopped it), the next step skipped.
    const timeoutResult = readResult(join(dir, "deb-timeout"));
    assert.equal(b.code, 1, b.stderr);
    assert.equal(timeoutResult.status, "timeout");
    assert.equal(timeoutResult.exitCode, -1);
    assert.deepEqual(
      timeoutResult.steps.map((step) => [step.name, step.status, step.timedOut]),
      [
        ["sleeper", "timeout", true],
        ["never", "skipped", false],
      ],
    );
    // Far below the step's `sleep 300`; under a loaded CI machine the kill exec alone has taken 38 s.
    assert.ok(timeoutResult.steps[0]!.durationMs < 150_000, `the step ran ${timeoutResult.steps[0]!.durationMs} ms`);
    const timeoutLog = readFileSync(join(dir, "deb-timeout", "run.log"), "utf8");
    assert.match(timeoutLog, /sleeping/, `the step's output before its timeout is in run.log:\n${timeoutLog}`);

    // The same pipeline under sh -e (dash on Debian) passes: only the last command's status counts.
    const plainResult = readResult(join(dir, "deb-sh"));
    assert.equal(c.code, 0, c.stderr);
    assert.deepEqual(
      plainResult.steps.map((step) => [step.name, step.status, step.exitCode]),
      [["pipeline", "success", 0]],
    );
    assert.match(c.stdout, /^sh -e went on$/m);
    await assertNothingLeft(cluster);
  });
});
