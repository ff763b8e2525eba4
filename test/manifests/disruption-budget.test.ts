import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { describe, it } from "node:test";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { buildDisruptionBudget, type DisruptionBudgetInput } from "../../src/manifests/disruption-budget.js";
import { buildJobManifest } from "../../src/manifests/manifest.js";
import { buildRunSelector, MANAGED_SELECTOR } from "../../src/manifests/labels.js";
import { buildJobName, buildRunIdLabel } from "../../src/manifests/names.js";

const FIXTURES = new URL("../../../test/fixtures/manifests/", import.meta.url);

const minimal: DisruptionBudgetInput = { jobName: buildJobName("42"), runId: "42", runIdLabel: buildRunIdLabel("42") };
const maximal: DisruptionBudgetInput = {
  ...minimal,
  namespace: "ci-tenant",
  jobUid: "0b4c8a52-5a7e-4e55-9d0c-6f0d1d7e2b11",
};

/** Compares with the checked-in fixture; UPDATE_GOLDEN=1 rewrites it. */
function assertGolden(name: string, manifest: object): void {
  const url = new URL(name, FIXTURES);
  const text = `${JSON.stringify(manifest, null, 2)}\n`;
  if (process.env.UPDATE_GOLDEN === "1") writeFileSync(url, text);
  assert.equal(text, readFileSync(url, "utf8"), `${name} differs from the golden file (UPDATE_GOLDEN=1 to accept)`);
}

/** Whether every label of a selector's matchLabels is on `labels`. */
function selects(matchLabels: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(matchLabels).every(([key, value]) => labels[key] === value);
}

describe("buildDisruptionBudget", () => {
  it("matches the minimal golden fixture", () => assertGolden("budget-minimal.json", buildDisruptionBudget(minimal)));
  it("matches the maximal golden fixture", () => assertGolden("budget-maximal.json", buildDisruptionBudget(maximal)));

  it("validates against the Kubernetes OpenAPI schema", () => {
    for (const input of [minimal, maximal])
      assert.doesNotThrow(() => new PodDisruptionBudget(buildDisruptionBudget(input)).validate());
  });

  it("allows no disruption of exactly the run's pod, selected by the labels its Job gives the pod", () => {
    const budget = buildDisruptionBudget(maximal);
    assert.equal(budget.spec?.maxUnavailable, 0);
    assert.equal(budget.spec?.minAvailable, undefined);
    const job = buildJobManifest({
      jobName: minimal.jobName,
      runId: "42",
      runIdLabel: minimal.runIdLabel,
      image: "busybox:1.36",
      cpu: "1",
      memory: "1Gi",
      budgetSeconds: 60,
      createToken: "t",
    });
    const matchLabels = budget.spec?.selector?.matchLabels ?? {};
    assert.ok(selects(matchLabels, job.spec?.template.metadata?.labels ?? {}), "the run's pod is selected");
    const other = buildJobManifest({
      jobName: buildJobName("43"),
      runId: "43",
      runIdLabel: buildRunIdLabel("43"),
      image: "busybox:1.36",
      cpu: "1",
      memory: "1Gi",
      budgetSeconds: 60,
      createToken: "t",
    });
    assert.ok(!selects(matchLabels, other.spec?.template.metadata?.labels ?? {}), "another run's pod is not");
  });

  it("carries the labels gc finds ours by, and the Job's name", () => {
    const budget = buildDisruptionBudget(minimal);
    assert.equal(budget.metadata?.name, minimal.jobName);
    const [managed, runId] = buildRunSelector(minimal.runIdLabel)
      .split(",")
      .map((term) => term.split("="));
    assert.equal(budget.metadata?.labels?.[managed![0]!], managed![1]);
    assert.equal(budget.metadata?.labels?.[runId![0]!], runId![1]);
    assert.equal(
      `${Object.keys(budget.metadata?.labels ?? {})[0]}=${Object.values(budget.metadata?.labels ?? {})[0]}`,
      MANAGED_SELECTOR,
    );
  });

  it("is owned by the Job when its uid is known, without blocking the Job's deletion, and by nothing otherwise", () => {
    assert.deepEqual(buildDisruptionBudget(maximal).metadata?.ownerReferences, [
      { apiVersion: "batch/v1", kind: "Job", name: minimal.jobName, uid: maximal.jobUid },
    ]);
    assert.equal(buildDisruptionBudget(minimal).metadata?.ownerReferences, undefined);
  });
});
