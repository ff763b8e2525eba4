// Tests the run's plan: what a restarted or adopting runner continues a run from, never with a secret's value.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readRunPlan, serializeRunPlan, settingsFromPlan } from "../../src/run/run-plan.js";
import type { RunSettings } from "../../src/executor/kubernetes/context.js";

const settings = {
  runId: "r1",
  jobName: "knotless-r1",
  runIdLabel: "r1",
  target: { namespace: "ci" },
  image: "busybox:1.36",
  cpu: "1",
  memory: "1Gi",
  steps: [{ name: "a", script: "echo hi" }],
  env: [{ name: "PLAIN", value: "visible" }],
  secrets: [{ name: "TOKEN", value: "s3cr3t-value" }],
  checkoutDir: "/tmp/checkout",
  outDir: "/tmp/out",
  timeoutMs: 60_000,
  podTimeoutMs: 30_000,
  maxOutputBytes: 1000,
  keep: false,
  hostTar: { binary: "tar", env: { AWS_SECRET_ACCESS_KEY: "env-secret" } },
  gitCheckout: {
    url: "https://example.org/r.git",
    sha: "a".repeat(40),
    depth: 1,
    submodules: false,
    host: { binary: "git", env: { HOME: "/root", GH: "env-secret" } },
  },
} as unknown as RunSettings;

describe("serializeRunPlan", () => {
  it("keeps the secrets' names but no value, and none of this host's tools' environments", () => {
    const text = serializeRunPlan(settings);
    assert.ok(!text.includes("s3cr3t-value"));
    assert.ok(!text.includes("env-secret"));
    const plan = readRunPlan(text);
    assert.deepEqual(plan.secretNames, ["TOKEN"]);
    assert.equal(plan.settings.jobName, "knotless-r1");
    assert.deepEqual(plan.settings.steps, settings.steps);
    assert.equal(plan.settings.hostTar, undefined);
  });

  it("gives back settings with the secrets read from the pod and this host's tools", () => {
    const plan = readRunPlan(serializeRunPlan(settings));
    const back = settingsFromPlan(
      plan,
      [
        { name: "TOKEN", value: "from-pod" },
        { name: "OTHER", value: "x" },
      ],
      {
        hostTar: { binary: "gtar", env: {} },
        git: { binary: "git", env: {} },
      },
    );
    assert.deepEqual(back.secrets, [{ name: "TOKEN", value: "from-pod" }]);
    assert.equal(back.hostTar?.binary, "gtar");
    assert.equal(back.gitCheckout?.host?.binary, "git");
  });

  it("refuses text that is not a plan of its version, with a clear message", () => {
    assert.throws(() => readRunPlan("{"), /the run's plan is not JSON/);
    assert.throws(() => readRunPlan('{"version":2}'), /not a plan of version 1/);
    assert.throws(() => readRunPlan('{"version":1,"settings":{}}'), /lacks its run id/);
  });
});
