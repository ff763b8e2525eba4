import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildRunSettings } from "../../src/settings/build-run-settings.js";
import { planWorkflowRun, RUN_DEFAULTS } from "../../src/settings/plan-workflow-run.js";
import { resolveWorkflow, type ResolvedWorkflow } from "../../src/settings/resolve-workflow.js";
import { parseOk } from "../workflow/workflow-fixtures.js";

function resolved(text: string): ResolvedWorkflow {
  const result = resolveWorkflow(parseOk(text, "ci.yml"));
  assert.ok(result.ok);
  return result.workflow;
}

const WORKFLOW = [
  "when:",
  "  - event: push",
  "image: debian:bookworm-slim",
  "caches:",
  "  - key: k-{{ KNOTLESS_RUN_ID }}",
  "    paths: [a]",
  "artifacts:",
  "  - name: out",
  "    paths: x",
  "steps:",
  "  - name: build",
  "    command: make",
  "",
].join("\n");
const BASE = {
  runId: "r1",
  target: { namespace: "ci" },
  checkoutDir: "/co",
  outDir: "/out",
  podTimeoutMs: 1000,
  maxOutputBytes: 10,
  maxLogBytes: 20,
};

describe("buildRunSettings", () => {
  it("takes a matched plan's image, steps, variables, caches and artifacts, and names the Job after the run id", () => {
    const plan = planWorkflowRun(resolved(WORKFLOW), { runId: "r1", trigger: { event: "push" } });
    const settings = buildRunSettings({
      ...BASE,
      plan,
      cacheBackend: { kind: "dir", dir: "/c", repo: "a/b", maxBytes: 1 },
    });
    assert.equal(settings.jobName, "knotless-run-r1");
    assert.equal(settings.runIdLabel, "r1");
    assert.equal(settings.image, "debian:bookworm-slim");
    assert.deepEqual(
      settings.steps.map((s) => s.script),
      ["make"],
    );
    assert.ok(settings.env.some((v) => v.name === "KNOTLESS_RUN_ID" && v.value === "r1"));
    assert.deepEqual(
      settings.caches?.map((c) => c.key),
      ["k-r1"],
    );
    assert.deepEqual(
      settings.artifacts?.map((a) => a.name),
      ["out"],
    );
    assert.equal(settings.workflow?.name, "ci.yml");
  });

  it("leaves a plan's caches out when no backend is given", () => {
    const plan = planWorkflowRun(resolved(WORKFLOW), { runId: "r1" });
    const settings = buildRunSettings({ ...BASE, plan });
    assert.equal(settings.caches, undefined);
    assert.equal(settings.cacheBackend, undefined);
  });

  it("fills a steps file's run from the overrides, then the defaults", () => {
    const settings = buildRunSettings({
      ...BASE,
      steps: [{ name: "a", script: "true", source: "s:1" }],
      overrides: { memory: "1Gi" },
    });
    assert.equal(settings.image, RUN_DEFAULTS.image);
    assert.equal(settings.memory, "1Gi");
    assert.equal(settings.cpu, RUN_DEFAULTS.cpu);
    assert.equal(settings.workflow, undefined);
  });

  it("keeps secrets only when there are some", () => {
    assert.equal(buildRunSettings({ ...BASE, secrets: [] }).secrets, undefined);
    assert.deepEqual(buildRunSettings({ ...BASE, secrets: [{ name: "A", value: "b" }] }).secrets, [
      { name: "A", value: "b" },
    ]);
  });

  it("takes the runner configuration's pod keys as settings.pod, its ephemeral storage coming through the plan, and none without them", () => {
    const pod = {
      ephemeralStorage: { limit: "10Gi" },
      nodeSelector: { pool: "ci" },
      imagePullSecrets: ["registry-credentials"],
      security: "restricted" as const,
    };
    assert.deepEqual(buildRunSettings({ ...BASE, steps: [], pod }).pod, {
      nodeSelector: { pool: "ci" },
      imagePullSecrets: ["registry-credentials"],
      security: "restricted",
    });
    assert.equal(
      "pod" in buildRunSettings({ ...BASE, steps: [], pod: { ephemeralStorage: { limit: "10Gi" } } }),
      false,
    );
    assert.equal("pod" in buildRunSettings({ ...BASE, steps: [] }), false);
  });

  it("guards every run with a disruption budget unless the configuration's pod.disruptionBudget is false, which stays out of settings.pod", () => {
    assert.equal(buildRunSettings({ ...BASE, steps: [] }).disruptionBudget, true);
    assert.equal(buildRunSettings({ ...BASE, steps: [], pod: { disruptionBudget: true } }).disruptionBudget, true);
    const off = buildRunSettings({
      ...BASE,
      steps: [],
      pod: { disruptionBudget: false, nodeSelector: { pool: "ci" } },
    });
    assert.equal(off.disruptionBudget, false);
    assert.deepEqual(off.pod, { nodeSelector: { pool: "ci" } });
  });
});
