import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { identifyHashFilesCall } from "../../src/workflow/render-key.js";
import { listHashFilesNeeded, planWorkflowRun } from "../../src/settings/plan-workflow-run.js";
import { DEFAULT_RUNNER_CONFIG } from "../../src/config/runner-config.js";
import { resolveWorkflow, type ResolvedWorkflow } from "../../src/settings/resolve-workflow.js";
import { WorkflowError } from "../../src/workflow/workflow-errors.js";
import { parseOk } from "../workflow/workflow-fixtures.js";

function resolved(text: string): ResolvedWorkflow {
  const result = resolveWorkflow(parseOk(text, "ci.yml"));
  assert.ok(result.ok);
  return result.workflow;
}

const WORKFLOW = [
  "when:",
  "  - event: push",
  "    branch: main",
  "environment:",
  "  NODE: 20",
  "caches:",
  `  - key: 'npm-{{ NODE }}-{{ KNOTLESS_REF_NAME }}-{{ hashFiles "package-lock.json" }}'`,
  "    restore-keys:",
  "      - 'npm-{{ NODE }}-{{ KNOTLESS_REF_NAME }}-'",
  "      - npm-",
  "    paths: [node_modules, /root/.npm]",
  "artifacts:",
  "  - name: junit",
  "    paths: reports/*.xml",
  "    when: failure",
  "    required: true",
  "steps:",
  "  - name: install",
  "    command: npm ci",
  "",
].join("\n");

const HASHES = new Map([[identifyHashFilesCall(["package-lock.json"]), "f00d"]]);
const PUSH = { event: "push", ref: "refs/heads/main" };

describe("planWorkflowRun's caches and artifacts", () => {
  it("renders each key and fallback with the run's variables and the file hashes, and keeps paths and artifacts as parsed", () => {
    const plan = planWorkflowRun(resolved(WORKFLOW), { runId: "r1", trigger: PUSH, caches: { fileHashes: HASHES } });
    assert.ok(plan.matched);
    assert.deepEqual(plan.caches, [
      { key: "npm-20-main-f00d", restoreKeys: ["npm-20-main-", "npm-"], paths: ["/work/node_modules", "/root/.npm"] },
    ]);
    assert.deepEqual(plan.artifacts, [
      { name: "junit", paths: ["/work/reports/*.xml"], when: "failure", required: true },
    ]);
  });

  it("renders a workflow variable over a run variable of the same name, as the steps see it", () => {
    const text = `environment:\n  CI: custom\ncaches:\n  - key: 'k-{{ CI }}'\n    paths: x\nsteps:\n  - name: a\n    command: b\n`;
    const plan = planWorkflowRun(resolved(text), { runId: "r1" });
    assert.ok(plan.matched);
    assert.equal(plan.caches[0]!.key, "k-custom");
  });

  it("refuses, as bad input at the template's place, a variable the run does not set and two caches that render one key", () => {
    const text = `caches:\n  - key: 'a-{{ KNOTLESS_SHA }}'\n    restore-keys: '{{ KNOTLESS_EVENT }}-'\n    paths: x\n  - key: 'same-{{ KNOTLESS_RUN_ID }}'\n    paths: y\n  - key: 'same-r1'\n    paths: z\nsteps:\n  - name: a\n    command: b\n`;
    assert.throws(
      () => planWorkflowRun(resolved(text), { runId: "r1" }),
      (error) =>
        error instanceof WorkflowError &&
        error.message ===
          [
            'ci.yml:2:10: caches[0].key: the key template "a-{{ KNOTLESS_SHA }}" uses {{ KNOTLESS_SHA }}, which this run does not set (set by --sha)',
            'ci.yml:3:19: caches[0].restore-keys: the key template "{{ KNOTLESS_EVENT }}-" uses {{ KNOTLESS_EVENT }}, which this run does not set (set by --event)',
            'ci.yml:7:10: caches[2].key: renders "same-r1", the same key as caches[1].key at ci.yml:5:10; keys are immutable once saved, so only one of them could ever be saved',
          ].join("\n"),
    );
  });

  it("renders nothing with the caches off, and still plans the artifacts", () => {
    const plan = planWorkflowRun(resolved(WORKFLOW), { runId: "r1", trigger: PUSH, caches: { off: true } });
    assert.ok(plan.matched);
    assert.deepEqual(plan.caches, []);
    assert.equal(plan.artifacts.length, 1);
  });

  it("renders nothing for a run that does not match its trigger, so nothing needs hashing", () => {
    const plan = planWorkflowRun(resolved(WORKFLOW), {
      runId: "r1",
      trigger: { event: "push", ref: "refs/heads/dev" },
    });
    assert.equal(plan.matched, false);
  });

  it("refuses a key whose files were not hashed rather than render it without them", () => {
    assert.throws(
      () => planWorkflowRun(resolved(WORKFLOW), { runId: "r1", trigger: PUSH }),
      /caches\[0\]\.key: .* uses hashFiles, but the files of the checkout were not hashed for this run/,
    );
  });

  it("plans no caches and no artifacts for a workflow without them", () => {
    const plan = planWorkflowRun(resolved("steps:\n  - name: a\n    command: b\n"), { runId: "r1" });
    assert.ok(plan.matched);
    assert.deepEqual([plan.caches, plan.artifacts], [[], []]);
  });
});

describe("listHashFilesNeeded", () => {
  it("lists each distinct hashFiles call of the keys and restore keys once, in file order", () => {
    const text = `caches:\n  - key: '{{ hashFiles "a" }}-{{ hashFiles "b" "c" }}'\n    restore-keys: ['{{ hashFiles "a" }}-']\n    paths: x\n  - key: '{{ hashFiles "d" }}'\n    paths: y\nsteps:\n  - name: a\n    command: b\n`;
    assert.deepEqual(listHashFilesNeeded(resolved(text)), [["a"], ["b", "c"], ["d"]]);
    assert.deepEqual(listHashFilesNeeded(resolved("steps:\n  - name: a\n    command: b\n")), []);
  });

  it("records in the workflow summary (the result's workflow.clamped) each value the limits clamped, with its position and the limit used", () => {
    const text = "timeout: 2h\nresources: {cpu: 8, memory: 1Gi}\nsteps:\n  - name: build\n    command: make\n";
    const limits = { maxCpu: "4", maxMemory: "8Gi", maxTimeoutMs: 3_600_000, onExceed: "clamp" as const };
    const result = resolveWorkflow(parseOk(text, "ci.yml"), {
      runner: { config: { ...DEFAULT_RUNNER_CONFIG, limits }, file: "ops.yml" },
    });
    assert.ok(result.ok);
    const plan = planWorkflowRun(result.workflow, { runId: "1" });
    assert.ok(plan.matched);
    assert.deepEqual([plan.cpu, plan.memory, plan.timeoutMs], ["4", "1Gi", 3_600_000]);
    assert.deepEqual(plan.workflow.clamped, [
      { path: "resources.cpu", value: "8", limit: "4", setting: "limits.maxCpu", at: "ci.yml:2:18" },
      { path: "timeout", value: "2h00m", limit: "1h00m", setting: "limits.maxTimeout", at: "ci.yml:1:10" },
    ]);
    assert.equal(planWorkflowRun(resolved(text), { runId: "1" }).workflow.clamped, undefined);
  });
});
