import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_RUNNER_CONFIG } from "../../src/config/runner-config.js";
import { applyLimits } from "../../src/settings/apply-limits.js";
import { formatIssue } from "../../src/workflow/workflow-errors.js";
import { parseOk } from "./workflow-fixtures.js";

const WORKFLOW = [
  "image: registry.example/ci/builder:1",
  "services:",
  "  - {name: db, image: registry.example/ci/postgres:16}",
  "  - {name: cache, image: docker.io/library/redis:7}",
  "steps:",
  "  - {name: test, command: make}",
  "",
].join("\n");

describe("limits.images on a workflow's services", () => {
  it("refuses a service image no pattern allows, at the service's image, even under onExceed: clamp", () => {
    for (const onExceed of ["refuse", "clamp"] as const) {
      const held = applyLimits(parseOk(WORKFLOW, "wf.yml"), {
        config: { ...DEFAULT_RUNNER_CONFIG, limits: { onExceed, images: ["registry.example/ci/**"] } },
        file: "ops.yml",
      });
      assert.deepEqual(held.errors.map(formatIssue), [
        "wf.yml:4:26: services[1].image: docker.io/library/redis:7 matches none of the images limits.images in --config ops.yml allows (registry.example/ci/**)",
      ]);
    }
  });

  it("accepts service images without limits.images", () => {
    assert.deepEqual(applyLimits(parseOk(WORKFLOW, "wf.yml"), { config: DEFAULT_RUNNER_CONFIG }).errors, []);
  });
});
