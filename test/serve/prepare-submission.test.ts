import assert from "node:assert/strict";
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { DEFAULT_RUNNER_CONFIG, type RunnerLimits } from "../../src/config/runner-config.js";
import { describeError, InputError } from "../../src/core/errors.js";
import { WorkflowError } from "../../src/workflow/workflow-errors.js";
import { XrpcError } from "../../src/serve/http-errors.js";
import { prepareSubmission, type RunDefaults } from "../../src/serve/prepare-submission.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const DEFAULTS: RunDefaults = {
  target: { namespace: "ci" } as RunDefaults["target"],
  podTimeoutMs: 60_000,
  maxOutputBytes: 1024,
  maxLogBytes: 1024,
};
const WORKFLOW = { name: "wf.yml", text: "clone: {skip: true}\nsteps: [{name: a, command: b}]\n" };

describe("a submission's settings", () => {
  it("carry the service's --pod-idle-timeout into the run's settings", async () => {
    const prepared = await prepareSubmission({ workflow: WORKFLOW }, "r2", "/nonexistent-state", {
      ...DEFAULTS,
      podIdleTimeoutMs: 20_000,
    });
    assert.equal(prepared.kind, "run");
    assert.equal(prepared.kind === "run" ? prepared.settings.podIdleTimeoutMs : undefined, 20_000);
  });
});

describe("a submission held to the service's --config", () => {
  const withLimits = (
    limits: Omit<RunnerLimits, "onExceed"> & { onExceed: RunnerLimits["onExceed"] },
  ): RunDefaults => ({ ...DEFAULTS, runner: { config: { ...DEFAULT_RUNNER_CONFIG, limits }, file: "ops.yml" } });
  const HUNGRY = {
    name: "wf.yml",
    text: "clone: {skip: true}\nresources:\n  cpu: 4\nsteps: [{name: a, command: b}]\n",
  };

  it("refuses a workflow over a limit with InvalidWorkflow's error, naming the limit, its file and the value's position", async () => {
    await assert.rejects(
      prepareSubmission(
        { workflow: HUNGRY },
        "r3",
        "/nonexistent-state",
        withLimits({ maxCpu: "1", onExceed: "refuse" }),
      ),
      (error: unknown) => {
        assert.ok(error instanceof WorkflowError);
        assert.match(
          String(describeError(error)),
          /^wf\.yml:3:8: resources\.cpu: 4 is over limits\.maxCpu 1 in --config ops\.yml/,
        );
        return true;
      },
    );
  });

  it("clamps a workflow over a limit under onExceed: clamp, and carries the warning for the run's log", async () => {
    const prepared = await prepareSubmission(
      { workflow: HUNGRY },
      "r4",
      "/nonexistent-state",
      withLimits({ maxCpu: "1", onExceed: "clamp" }),
    );
    assert.equal(prepared.kind, "run");
    if (prepared.kind !== "run") return;
    assert.equal(prepared.settings.cpu, "1");
    assert.deepEqual(prepared.warnings, [
      "wf.yml:3:8: warning: resources.cpu: 4 is over limits.maxCpu 1 in --config ops.yml: clamped to 1 (onExceed: clamp)",
    ]);
  });

  it("holds the submission's overrides to the limits like the workflow's values: refused (400) naming the override, or clamped into the result's workflow.clamped", async () => {
    const overrides = { cpu: "2", timeout: "2h" };
    await assert.rejects(
      prepareSubmission(
        { workflow: WORKFLOW, overrides },
        "r7",
        "/nonexistent-state",
        withLimits({ maxCpu: "1", maxTimeoutMs: 600_000, onExceed: "refuse" }),
      ),
      (error: unknown) => {
        assert.ok(error instanceof InputError);
        assert.deepEqual(error.message.split("\n"), [
          "overrides.cpu 2 is over limits.maxCpu 1 in --config ops.yml; ask for at most 1, or the operator sets limits.onExceed: clamp",
          "overrides.timeout 2h00m is over limits.maxTimeout 10m00s in --config ops.yml; ask for at most 10m00s, or the operator sets limits.onExceed: clamp",
        ]);
        return true;
      },
    );
    const prepared = await prepareSubmission(
      { workflow: WORKFLOW, overrides },
      "r8",
      "/nonexistent-state",
      withLimits({ maxCpu: "1", maxTimeoutMs: 600_000, onExceed: "clamp" }),
    );
    assert.equal(prepared.kind, "run");
    if (prepared.kind !== "run") return;
    assert.deepEqual([prepared.settings.cpu, prepared.settings.timeoutMs], ["1", 600_000]);
    assert.deepEqual(prepared.settings.workflow?.clamped, [
      { path: "overrides.cpu", value: "2", limit: "1", setting: "limits.maxCpu" },
      { path: "overrides.timeout", value: "2h00m", limit: "10m00s", setting: "limits.maxTimeout" },
    ]);
    assert.equal(prepared.warnings.length, 2);
  });

  it("puts the --config file's pod keys on every served run's pod, as run does", async () => {
    const pod = {
      ...DEFAULT_RUNNER_CONFIG.pod,
      nodeSelector: { pool: "ci" },
      imagePullSecrets: ["registry"],
      security: "restricted" as const,
    };
    const defaults: RunDefaults = {
      ...DEFAULTS,
      runner: { config: { ...DEFAULT_RUNNER_CONFIG, pod }, file: "ops.yml" },
    };
    const prepared = await prepareSubmission({ workflow: WORKFLOW }, "r6", "/nonexistent-state", defaults);
    assert.equal(prepared.kind, "run");
    if (prepared.kind !== "run") return;
    assert.deepEqual(prepared.settings.pod?.nodeSelector, { pool: "ci" });
    assert.deepEqual(prepared.settings.pod?.imagePullSecrets, ["registry"]);
    assert.equal(prepared.settings.pod?.security, "restricted");
  });

  it("takes the same workflow without a --config (the defaults have no limits)", async () => {
    const prepared = await prepareSubmission({ workflow: HUNGRY }, "r5", "/nonexistent-state", DEFAULTS);
    assert.equal(prepared.kind === "run" ? prepared.settings.cpu : undefined, "4");
  });
});

describe("a submission's host inputs", () => {
  const CLONING = { name: "wf.yml", text: "steps: [{name: a, command: b}]\n" };
  const sha = "a".repeat(40);
  const host = makeTestTempDir("serve-host-inputs-");
  const root = join(host, "root");
  mkdirSync(join(root, "repo", "sub"), { recursive: true });
  writeFileSync(join(root, "file.txt"), "a file\n");
  mkdirSync(join(host, "outside"));
  symlinkSync(join(host, "outside"), join(root, "escape"));
  symlinkSync(join(root, "repo"), join(root, "alias"));
  const rooted: RunDefaults = { ...DEFAULTS, checkoutRoot: root };
  const refusal = (error: unknown): string => {
    assert.ok(error instanceof InputError || error instanceof XrpcError, String(error));
    assert.ok(!(error instanceof XrpcError) || error.status === 400, `status ${(error as XrpcError).status}`);
    return error.message;
  };
  const messageFor = async (
    input: Parameters<typeof prepareSubmission>[0],
    defaults: RunDefaults = rooted,
  ): Promise<string> => {
    try {
      await prepareSubmission(input, "h1", "/nonexistent-state", defaults);
    } catch (error) {
      return refusal(error);
    }
    assert.fail(`${JSON.stringify(input.checkout ?? input.sharedSteps)} was taken`);
  };

  it("refuses checkout.dir when the service was started without --checkout-root, whatever the path", async () => {
    const message = await messageFor({ workflow: CLONING, checkout: { dir: join(root, "repo") } }, DEFAULTS);
    assert.match(message, /^checkout\.dir is not taken here: this service was started without --checkout-root/);
    assert.equal(await messageFor({ workflow: CLONING, checkout: { dir: "/etc" } }, DEFAULTS), message);
  });

  it("refuses a checkout.dir outside the checkout root, one whose symlink leads out of it, and one with .. out of it", async () => {
    for (const dir of [
      "/etc",
      join(host, "outside"),
      join(root, "escape"),
      join(root, "repo", "..", "..", "outside"),
      host,
    ]) {
      assert.match(
        await messageFor({ workflow: CLONING, checkout: { dir } }),
        /^checkout\.dir: .* is not a directory inside this service's checkout root$/,
        dir,
      );
    }
  });

  it("answers a missing path, a file and a directory outside the root with the same words, so that no reply tells what exists on the host", async () => {
    const words = async (dir: string) =>
      (await messageFor({ workflow: CLONING, checkout: { dir } })).replace(JSON.stringify(dir), "DIR");
    const missing = await words(join(root, "missing"));
    assert.equal(await words(join(root, "file.txt")), missing);
    assert.equal(await words("/etc"), missing);
    assert.equal(await words("/nonexistent/deeper"), missing);
    assert.equal(await words("relative/path"), missing);
    assert.doesNotMatch(missing, new RegExp(root));
  });

  it("takes a directory inside the root, through a symlink that stays inside, and hands the run its resolved path", async () => {
    const prepared = await prepareSubmission(
      { workflow: CLONING, checkout: { dir: join(root, "alias", "sub") } },
      "h2",
      "/nonexistent-state",
      rooted,
    );
    assert.equal(
      prepared.kind === "run" ? prepared.settings.checkoutDir : undefined,
      join(realpathSync(root), "repo", "sub"),
    );
  });

  it("holds sharedSteps.dir to the same root", async () => {
    assert.match(
      await messageFor({ workflow: CLONING, checkout: { dir: join(root, "repo") }, sharedSteps: { dir: "/etc" } }),
      /^sharedSteps\.dir: .* is not a directory inside this service's checkout root$/,
    );
    assert.match(
      await messageFor(
        {
          workflow: { name: "wf.yml", text: "clone: {skip: true}\nsteps: [{name: a, command: b}]\n" },
          sharedSteps: { dir: "/etc" },
        },
        DEFAULTS,
      ),
      /^sharedSteps\.dir is not taken here/,
    );
  });

  it("refuses git URLs other than https: file://, a plain path, ssh, git:// and http:// without --allow-http-git", async () => {
    const withGit: RunDefaults = { ...DEFAULTS, git: { binary: "git", env: {} } };
    for (const url of [
      "file:///etc",
      "/srv/repo.git",
      "ssh://git@example.com/r.git",
      "git://example.com/r.git",
      "http://example.com/r.git",
      "ftp://example.com/r.git",
      "git@example.com:r.git",
    ]) {
      assert.match(
        await messageFor({ workflow: CLONING, checkout: { git: { url, sha } } }, withGit),
        /^checkout\.git\.url (expects|takes) .*https:\/\//,
        url,
      );
    }
    const https = await prepareSubmission(
      { workflow: CLONING, checkout: { git: { url: "https://example.com/r.git", sha } } },
      "h3",
      "/nonexistent-state",
      withGit,
    );
    assert.equal(https.kind === "run" ? https.git?.url : undefined, "https://example.com/r.git");
    const http = await prepareSubmission(
      { workflow: CLONING, checkout: { git: { url: "http://example.com/r.git", sha } } },
      "h4",
      "/nonexistent-state",
      { ...withGit, allowHttpGit: true },
    );
    assert.equal(http.kind === "run" ? http.git?.url : undefined, "http://example.com/r.git");
    assert.match(
      await messageFor(
        { workflow: CLONING, checkout: { git: { url: "file:///etc", sha } } },
        { ...withGit, allowHttpGit: true },
      ),
      /^checkout\.git\.url/,
    );
  });
});
