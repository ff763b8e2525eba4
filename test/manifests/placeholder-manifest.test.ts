import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { describe, it } from "node:test";
import { Job } from "kubernetes-models/batch/v1/Job";
import {
  buildPlaceholderManifest,
  buildPlaceholderName,
  type PlaceholderManifestInput,
} from "../../src/manifests/placeholder-manifest.js";
import { isPlaceholderJob } from "../../src/warm/placeholder.js";
import { buildJobManifest } from "../../src/manifests/manifest.js";

const FIXTURES = new URL("../../../test/fixtures/manifests/", import.meta.url);

const minimal: PlaceholderManifestInput = {
  name: buildPlaceholderName(0),
  image: "busybox:1.36",
  cpu: "500m",
  memory: "512Mi",
  seconds: 120,
};
const maximal: PlaceholderManifestInput = {
  name: buildPlaceholderName(49),
  namespace: "ci-tenant",
  image: "registry.example.org/team/builder@sha256:" + "a".repeat(64),
  cpu: "2",
  memory: "4Gi",
  seconds: 86_400,
};

/** Compares with the checked-in fixture; UPDATE_GOLDEN=1 rewrites it. */
function assertGolden(name: string, manifest: object): void {
  const url = new URL(name, FIXTURES);
  const text = `${JSON.stringify(manifest, null, 2)}\n`;
  if (process.env.UPDATE_GOLDEN === "1") writeFileSync(url, text);
  assert.equal(text, readFileSync(url, "utf8"), `${name} differs from the golden file (UPDATE_GOLDEN=1 to accept)`);
}

describe("buildPlaceholderManifest", () => {
  it("matches the minimal golden fixture", () =>
    assertGolden("placeholder-minimal.json", buildPlaceholderManifest(minimal)));
  it("matches the maximal golden fixture", () =>
    assertGolden("placeholder-maximal.json", buildPlaceholderManifest(maximal)));

  it("validates against the Kubernetes OpenAPI schema", () => {
    for (const input of [minimal, maximal])
      assert.doesNotThrow(() => new Job(buildPlaceholderManifest(input)).validate());
  });

  it("ends itself after its duration and is deleted at once when it has, so no runner needs to come back", () => {
    const job = buildPlaceholderManifest(minimal);
    assert.equal(job.spec?.activeDeadlineSeconds, 120);
    assert.equal(job.spec?.ttlSecondsAfterFinished, 0);
    assert.equal(job.spec?.backoffLimit, 0);
    assert.equal(job.spec?.template.spec?.restartPolicy, "Never");
  });

  it("requests what the run's pod requests and does nothing but wait, leaving at once on SIGTERM", () => {
    const container = buildPlaceholderManifest(minimal).spec!.template.spec!.containers[0]!;
    assert.deepEqual(container.resources, { requests: { cpu: "500m", memory: "512Mi" }, limits: { memory: "512Mi" } });
    assert.deepEqual(container.command, ["sh", "-c", "trap 'exit 0' TERM INT; sleep 120 & wait"]);
    assert.equal(buildPlaceholderManifest(minimal).spec?.template.spec?.terminationGracePeriodSeconds, 1);
  });

  it("is hardened like the run's pod and keeps no capability, since it only sleeps", () => {
    const spec = buildPlaceholderManifest(minimal).spec?.template.spec;
    assert.deepEqual(spec?.securityContext, { seccompProfile: { type: "RuntimeDefault" } });
    assert.deepEqual(spec?.containers[0]?.securityContext, {
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
    });
  });

  it("carries the warm role on the Job and its pod, which a run's Job never does", () => {
    const job = buildPlaceholderManifest(minimal);
    for (const labels of [job.metadata?.labels, job.spec?.template.metadata?.labels])
      assert.equal(labels?.["knotless.dev/role"], "warm");
    assert.equal(isPlaceholderJob(job), true);
    const run = buildJobManifest({
      jobName: "knotless-run-1",
      runId: "1",
      runIdLabel: "1",
      image: "busybox:1.36",
      cpu: "500m",
      memory: "512Mi",
      budgetSeconds: 60,
      createToken: "t",
    });
    assert.equal(isPlaceholderJob(run), false);
  });

  it("goes where the runs go: the operator's placement, pull secrets, labels and security profile, never the run's patch", () => {
    const job = buildPlaceholderManifest({
      ...minimal,
      pod: {
        nodeSelector: { pool: "ci" },
        tolerations: [{ key: "dedicated", operator: "Exists" }],
        affinity: { nodeAffinity: {} },
        priorityClassName: "ci-low",
        imagePullSecrets: ["registry-credentials"],
        labels: { team: "platform" },
        security: "restricted",
        podSpecPatch: { hostAliases: [{ ip: "10.0.0.5", hostnames: ["r"] }] },
      },
    });
    const spec = job.spec?.template.spec;
    assert.deepEqual(spec?.nodeSelector, { pool: "ci" });
    assert.deepEqual(spec?.tolerations, [{ key: "dedicated", operator: "Exists" }]);
    assert.deepEqual(spec?.affinity, { nodeAffinity: {} });
    assert.equal(spec?.priorityClassName, "ci-low");
    assert.deepEqual(spec?.imagePullSecrets, [{ name: "registry-credentials" }]);
    assert.equal(spec?.hostAliases, undefined);
    assert.equal(job.spec?.template.metadata?.labels?.team, "platform");
    assert.equal(job.spec?.template.metadata?.labels?.["knotless.dev/role"], "warm");
    assert.equal(spec?.securityContext?.runAsNonRoot, true);
    assert.deepEqual(spec?.containers[0]?.securityContext, {
      allowPrivilegeEscalation: false,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    });
  });
});
