import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_RUNNER_CONFIG, type RunnerLimits } from "../../src/config/runner-config.js";
import { describeError, InputError } from "../../src/errors.js";
import { WorkflowError } from "../../src/workflow/workflow-errors.js";
import { prepareSubmission, type RunDefaults } from "../../src/serve/prepare-submission.js";

const DEFAULTS: RunDefaults = { target: { namespace: "ci" } as RunDefaults["target"], podTimeoutMs: 60_000, maxOutputBytes: 1024, maxLogBytes: 1024 };
const WORKFLOW = { name: "wf.yml", text: "clone: {skip: true}\nsteps: [{name: a, command: b}]\n" };

describe("a submission's overrides", () => {
  it("refuses absurd cpu and memory overrides, saying the bounds", async () => {
    const table: Array<[overrides: { cpu?: string; memory?: string }, message: RegExp]> = [
      [{ cpu: "100000" }, /^overrides\.cpu: cpu 100000 is outside the bounds any run may ask for \(from 1m to 1024 cores\)$/],
      [{ memory: "999Ei" }, /^overrides\.memory: memory 999Ei is outside the bounds any run may ask for \(from 4Mi to 64Ti\)$/],
    ];
    for (const [overrides, message] of table) {
      await assert.rejects(prepareSubmission({ workflow: WORKFLOW, overrides }, "r1", "/nonexistent-state", DEFAULTS), (error: unknown) => {
        assert.ok(error instanceof InputError);
        assert.match(error.message, message);
        return true;
      });
    }
  });
});

describe("a submission's settings", () => {
  it("carry the service's --pod-idle-timeout into the run's settings", async () => {
    const prepared = await prepareSubmission({ workflow: WORKFLOW }, "r2", "/nonexistent-state", { ...DEFAULTS, podIdleTimeoutMs: 20_000 });
    assert.equal(prepared.kind, "run");
    assert.equal(prepared.kind === "run" ? prepared.settings.podIdleTimeoutMs : undefined, 20_000);
  });
});

describe("a submission held to the service's --config", () => {
  const withLimits = (limits: Omit<RunnerLimits, "onExceed"> & { onExceed: RunnerLimits["onExceed"] }): RunDefaults => ({ ...DEFAULTS, runner: { config: { ...DEFAULT_RUNNER_CONFIG, limits }, file: "ops.yml" } });
  const HUNGRY = { name: "wf.yml", text: "clone: {skip: true}\nresources:\n  cpu: 4\nsteps: [{name: a, command: b}]\n" };

  it("refuses a workflow over a limit with InvalidWorkflow's error, naming the limit, its file and the value's position", async () => {
    await assert.rejects(prepareSubmission({ workflow: HUNGRY }, "r3", "/nonexistent-state", withLimits({ maxCpu: "1", onExceed: "refuse" })), (error: unknown) => {
      assert.ok(error instanceof WorkflowError);
      assert.match(String(describeError(error)), /^wf\.yml:3:8: resources\.cpu: 4 is over limits\.maxCpu 1 in --config ops\.yml/);
      return true;
    });
  });

  it("clamps a workflow over a limit under onExceed: clamp, and carries the warning for the run's log", async () => {
    const prepared = await prepareSubmission({ workflow: HUNGRY }, "r4", "/nonexistent-state", withLimits({ maxCpu: "1", onExceed: "clamp" }));
    assert.equal(prepared.kind, "run");
    if (prepared.kind !== "run") return;
    assert.equal(prepared.settings.cpu, "1");
    assert.deepEqual(prepared.warnings, ["wf.yml:3:8: warning: resources.cpu: 4 is over limits.maxCpu 1 in --config ops.yml: clamped to 1 (onExceed: clamp)"]);
  });

  it("holds the submission's overrides to the limits like the workflow's values: refused (400) naming the override, or clamped into the result's workflow.clamped", async () => {
    const overrides = { cpu: "2", timeout: "2h" };
    await assert.rejects(prepareSubmission({ workflow: WORKFLOW, overrides }, "r7", "/nonexistent-state", withLimits({ maxCpu: "1", maxTimeoutMs: 600_000, onExceed: "refuse" })), (error: unknown) => {
      assert.ok(error instanceof InputError);
      assert.deepEqual(error.message.split("\n"), [
        "overrides.cpu 2 is over limits.maxCpu 1 in --config ops.yml; ask for at most 1, or the operator sets limits.onExceed: clamp",
        "overrides.timeout 2h00m is over limits.maxTimeout 10m00s in --config ops.yml; ask for at most 10m00s, or the operator sets limits.onExceed: clamp",
      ]);
      return true;
    });
    const prepared = await prepareSubmission({ workflow: WORKFLOW, overrides }, "r8", "/nonexistent-state", withLimits({ maxCpu: "1", maxTimeoutMs: 600_000, onExceed: "clamp" }));
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
    const pod = { ...DEFAULT_RUNNER_CONFIG.pod, nodeSelector: { pool: "ci" }, imagePullSecrets: ["registry"], security: "restricted" as const };
    const defaults: RunDefaults = { ...DEFAULTS, runner: { config: { ...DEFAULT_RUNNER_CONFIG, pod }, file: "ops.yml" } };
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
