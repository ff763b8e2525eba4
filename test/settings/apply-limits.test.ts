import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_RUNNER_CONFIG, type RunnerLimits } from "../../src/config/runner-config.js";
import { applyLimits, matchImagePattern } from "../../src/settings/apply-limits.js";
import { resolveWorkflow } from "../../src/settings/resolve-workflow.js";
import { formatIssue } from "../../src/workflow/workflow-errors.js";
import { parseOk } from "../workflow/workflow-fixtures.js";

const WORKFLOW = [
  "image: docker.io/library/debian:bookworm-slim",
  "timeout: 2h",
  "resources: {cpu: 8, memory: 16Gi}",
  "steps:",
  "  - name: build",
  "    timeout: 90m",
  "    command: make",
  "  - name: quick",
  "    command: echo",
  "",
].join("\n");

function limit(limits: Partial<RunnerLimits>, text = WORKFLOW) {
  return applyLimits(parseOk(text, "wf.yml"), {
    config: { ...DEFAULT_RUNNER_CONFIG, limits: { onExceed: "refuse", ...limits } },
    file: "ops.yml",
  });
}

describe("the runner configuration's limits on a workflow", () => {
  it("leaves a workflow within its limits (or without limits) as it is", () => {
    for (const limits of [
      {},
      { maxCpu: "8", maxMemory: "16Gi", maxTimeoutMs: 7_200_000, images: ["docker.io/library/*"] },
    ]) {
      const held = limit(limits);
      assert.deepEqual(
        [held.errors, held.clamped, held.resources, held.timeoutMs, held.stepTimeoutsMs],
        [[], [], { cpu: "8", memory: "16Gi" }, 7_200_000, [5_400_000, undefined]],
      );
    }
  });

  it("refuses each value over its limit, naming the limit, the file it is in and the value's position", () => {
    const held = limit({ maxCpu: "4", maxMemory: "8Gi", maxTimeoutMs: 3_600_000, images: ["registry.example/ci/**"] });
    assert.deepEqual(held.errors.map(formatIssue), [
      "wf.yml:3:18: resources.cpu: 8 is over limits.maxCpu 4 in --config ops.yml; ask for at most 4, or the operator sets limits.onExceed: clamp",
      "wf.yml:3:29: resources.memory: 16Gi is over limits.maxMemory 8Gi in --config ops.yml; ask for at most 8Gi, or the operator sets limits.onExceed: clamp",
      "wf.yml:2:10: timeout: 2h00m is over limits.maxTimeout 1h00m in --config ops.yml; ask for at most 1h00m, or the operator sets limits.onExceed: clamp",
      "wf.yml:5:5: steps[0].timeout: step 1 (build): 1h30m is over limits.maxTimeout 1h00m in --config ops.yml; ask for at most 1h00m, or the operator sets limits.onExceed: clamp",
      "wf.yml:1:8: image: docker.io/library/debian:bookworm-slim matches none of the images limits.images in --config ops.yml allows (registry.example/ci/**)",
    ]);
    assert.deepEqual(held.clamped, []);
  });

  it("numbers the step of a clamped timeout from 1, as the run's log numbers it", () => {
    const held = limit({ maxTimeoutMs: 3_600_000, onExceed: "clamp" });
    assert.match(
      formatIssue(held.clamped.find((issue) => formatIssue(issue).includes("steps[0]"))!),
      /steps\[0\]\.timeout: step 1 \(build\): /,
    );
  });

  it("clamps each value over its limit with onExceed: clamp and says so; an image is refused all the same", () => {
    const held = limit({
      maxCpu: "4",
      maxMemory: "8Gi",
      maxTimeoutMs: 3_600_000,
      images: ["debian:*"],
      onExceed: "clamp",
    });
    assert.deepEqual(
      [held.resources, held.timeoutMs, held.stepTimeoutsMs],
      [{ cpu: "4", memory: "8Gi" }, 3_600_000, [3_600_000, undefined]],
    );
    assert.deepEqual(held.clamped.map(formatIssue), [
      "wf.yml:3:18: resources.cpu: 8 is over limits.maxCpu 4 in --config ops.yml: clamped to 4 (onExceed: clamp)",
      "wf.yml:3:29: resources.memory: 16Gi is over limits.maxMemory 8Gi in --config ops.yml: clamped to 8Gi (onExceed: clamp)",
      "wf.yml:2:10: timeout: 2h00m is over limits.maxTimeout 1h00m in --config ops.yml: clamped to 1h00m (onExceed: clamp)",
      "wf.yml:5:5: steps[0].timeout: step 1 (build): 1h30m is over limits.maxTimeout 1h00m in --config ops.yml: clamped to 1h00m (onExceed: clamp)",
    ]);
    assert.deepEqual(held.errors.map(formatIssue), [
      "wf.yml:1:8: image: docker.io/library/debian:bookworm-slim matches none of the images limits.images in --config ops.yml allows (debian:*)",
    ]);
  });

  it("compares quantities by value, not by how they are written", () => {
    assert.deepEqual(limit({ maxCpu: "8000m", maxMemory: "16384Mi" }).errors, []);
    assert.equal(limit({ maxCpu: "7999m" }).errors.length, 1);
  });

  it("matches image patterns: * within a path segment, ** across segments", () => {
    const table: Array<[pattern: string, image: string, matches: boolean]> = [
      ["docker.io/library/*", "docker.io/library/debian:bookworm-slim", true],
      ["docker.io/library/*", "docker.io/library/x/y:1", false],
      ["registry.example/**", "registry.example/ci/tools/node:20", true],
      ["busybox:*", "busybox:1.36", true],
      ["busybox:1.36", "busybox:1.36", true],
      ["busybox:1.36", "busybox:1x36", false],
      ["alpine*", "alpine:3.22", true],
      ["*", "evil.example/alpine", false],
    ];
    for (const [pattern, image, matches] of table)
      assert.equal(matchImagePattern(pattern, image), matches, `${pattern} ~ ${image}`);
  });

  it("refuses a nixery workflow whose Nixery registry no limits.nixery pattern allows, at its dependencies, never clamped", () => {
    const text = "dependencies:\n  nixpkgs: [go]\nsteps:\n  - name: build\n    command: go build\n";
    const resolveWith = (limits: Partial<RunnerLimits>, nixeryBase: string) =>
      resolveWorkflow(parseOk(text, "wf.yml"), {
        nixeryBase,
        runner: { config: { ...DEFAULT_RUNNER_CONFIG, limits: { onExceed: "clamp", ...limits } }, file: "ops.yml" },
      });
    const refused = resolveWith({ nixery: ["registry.example:5000/nixery"] }, "https://nixery.dev/");
    assert.deepEqual(refused.ok ? [] : refused.errors.map(formatIssue), [
      "wf.yml:2:3: dependencies.nixpkgs: the image is composed on the Nixery registry nixery.dev, which matches none of the registries limits.nixery in --config ops.yml allows (registry.example:5000/nixery)",
    ]);
    const allowed = resolveWith({ nixery: ["registry.example:5000/**"] }, "registry.example:5000/nixery");
    assert.equal(allowed.ok && allowed.workflow.image?.startsWith("registry.example:5000/nixery/go/"), true);
    // Without limits.nixery, an allow-list of images is not bypassed by composing an image elsewhere.
    const byImages = resolveWith({ images: ["docker.io/library/*"] }, "nixery.dev");
    assert.match(
      byImages.ok ? "" : formatIssue(byImages.errors[0]!),
      /^wf\.yml:2:3: dependencies\.nixpkgs: the composed Nixery image nixery\.dev\/go\/bash\/.* matches none of the images limits\.images in --config ops\.yml allows \(docker\.io\/library\/\*\); the operator allows Nixery registries with limits\.nixery$/,
    );
    assert.equal(resolveWith({ images: ["nixery.dev/**"] }, "nixery.dev").ok, true);
  });
});
