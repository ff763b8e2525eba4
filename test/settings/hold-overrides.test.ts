import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_RUNNER_CONFIG, type RunnerLimits } from "../../src/config/runner-config.js";
import { InputError } from "../../src/core/errors.js";
import { FLAG_NAMES, holdOverrides, SUBMISSION_NAMES } from "../../src/settings/hold-overrides.js";

const source = (limits: Partial<RunnerLimits>) => ({
  config: { ...DEFAULT_RUNNER_CONFIG, limits: { onExceed: "refuse" as const, ...limits } },
  file: "ops.yml",
});
const OVER = { image: "evil.example/x:1", cpu: "8", memory: "16Gi", timeoutMs: 7_200_000, stepTimeoutMs: 5_400_000 };
const LIMITS = { maxCpu: "4", maxMemory: "8Gi", maxTimeoutMs: 3_600_000, images: ["docker.io/library/*"] };

describe("holdOverrides", () => {
  it("leaves overrides within the limits, or without limits, as they are", () => {
    for (const limits of [
      {},
      { maxCpu: "8", maxMemory: "16Gi", maxTimeoutMs: 7_200_000, images: ["evil.example/*"] },
    ]) {
      assert.deepEqual(holdOverrides(OVER, source(limits), FLAG_NAMES), { overrides: OVER, clamps: [], warnings: [] });
    }
  });

  it("refuses every override over its limit in one InputError naming each flag, the limit and the --config file", () => {
    assert.throws(
      () => holdOverrides(OVER, source(LIMITS), FLAG_NAMES),
      (error: unknown) => {
        assert.ok(error instanceof InputError);
        assert.deepEqual(error.message.split("\n"), [
          "--cpu 8 is over limits.maxCpu 4 in --config ops.yml; ask for at most 4, or the operator sets limits.onExceed: clamp",
          "--memory 16Gi is over limits.maxMemory 8Gi in --config ops.yml; ask for at most 8Gi, or the operator sets limits.onExceed: clamp",
          "--timeout 2h00m is over limits.maxTimeout 1h00m in --config ops.yml; ask for at most 1h00m, or the operator sets limits.onExceed: clamp",
          "--step-timeout 1h30m is over limits.maxTimeout 1h00m in --config ops.yml; ask for at most 1h00m, or the operator sets limits.onExceed: clamp",
          "--image evil.example/x:1 matches none of the images limits.images in --config ops.yml allows (docker.io/library/*)",
        ]);
        return true;
      },
    );
  });

  it("clamps under onExceed: clamp, saying so with serve's names, but never lets an image through", () => {
    const { image: _image, ...rest } = OVER;
    const held = holdOverrides(rest, source({ ...LIMITS, onExceed: "clamp" }), SUBMISSION_NAMES);
    assert.deepEqual(held.overrides, { cpu: "4", memory: "8Gi", timeoutMs: 3_600_000, stepTimeoutMs: 3_600_000 });
    assert.deepEqual(held.clamps, [
      { path: "overrides.cpu", value: "8", limit: "4", setting: "limits.maxCpu" },
      { path: "overrides.memory", value: "16Gi", limit: "8Gi", setting: "limits.maxMemory" },
      { path: "overrides.timeout", value: "2h00m", limit: "1h00m", setting: "limits.maxTimeout" },
      { path: "overrides.stepTimeout", value: "1h30m", limit: "1h00m", setting: "limits.maxTimeout" },
    ]);
    assert.equal(
      held.warnings[0],
      "overrides.cpu 8 is over limits.maxCpu 4 in --config ops.yml: clamped to 4 (onExceed: clamp)",
    );
    assert.throws(
      () => holdOverrides(OVER, source({ ...LIMITS, onExceed: "clamp" }), SUBMISSION_NAMES),
      /^InputError: overrides\.image evil\.example\/x:1 matches none/,
    );
  });
});
