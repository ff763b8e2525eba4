import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { describe, it } from "node:test";
import { Job } from "kubernetes-models/batch/v1/Job";
import type { RunSettings } from "../../src/executor/kubernetes/context.js";
import { buildRunManifest } from "../../src/executor/kubernetes/kubernetes-executor.js";
import { buildJobManifest, DEADLINE_MARGIN_SECONDS, type JobManifestInput } from "../../src/manifests/manifest.js";
import { buildDockerDaemonContainer } from "../../src/pod/docker-daemon.js";
import { exampleSettings } from "../support/example-settings.js";
import { parseRunnerConfig } from "../../src/config/read-runner-config.js";

/** The runner configuration with every key set (test/fixtures/runner-config/maximal.yml): its `pod` keys, as the run gets them. */
async function readMaximalPodConfig(): Promise<NonNullable<JobManifestInput["pod"]>> {
  const text = readFileSync(new URL("../../../test/fixtures/runner-config/maximal.yml", import.meta.url), "utf8");
  const { ephemeralStorage: _storage, ...pod } = (await parseRunnerConfig(text, "maximal.yml")).pod;
  return pod;
}

const FIXTURES = new URL("../../../test/fixtures/manifests/", import.meta.url);

const minimal: JobManifestInput = {
  jobName: "knotless-run-1",
  namespace: "default",
  runId: "1",
  runIdLabel: "1",
  image: "busybox:1.36",
  cpu: "500m",
  memory: "512Mi",
  budgetSeconds: 3600,
  createToken: "token",
};

const maximal: JobManifestInput = {
  ...minimal,
  jobName: "knotless-run-some-long-run-id-with-many-parts-0123456789-5d2c1e0a",
  namespace: "ci-tenant",
  runId: "Some_Long.Run/ID with many parts 0123456789",
  runIdLabel: "Some_Long.Run-ID-with-many-parts-0123456789-5d2c1e0a",
  image: "registry.example.org/team/builder@sha256:" + "a".repeat(64),
  cpu: "2",
  memory: "4Gi",
  budgetSeconds: 7200,
  owner: { host: "ci-runner-1.example.org", pid: 4242 },
  cacheClaim: { claim: "knotless-cache", repo: "did:plc:maximal/knot" },
  podIdleSeconds: 1200,
  placement: { nodeSelector: { "kubernetes.io/arch": "amd64" }, runtimeClassName: "kata" },
  extraContainers: [buildDockerDaemonContainer("docker.io/library/docker:28-dind")],
  ephemeralStorage: { request: "2Gi", limit: "10Gi" },
};

/** Compares with the checked-in fixture; UPDATE_GOLDEN=1 rewrites it. */
function assertGolden(name: string, manifest: object): void {
  const url = new URL(name, FIXTURES);
  const text = `${JSON.stringify(manifest, null, 2)}\n`;
  if (process.env.UPDATE_GOLDEN === "1") writeFileSync(url, text);
  assert.equal(text, readFileSync(url, "utf8"), `${name} differs from the golden file (UPDATE_GOLDEN=1 to accept)`);
}

describe("buildJobManifest", () => {
  it("matches the minimal golden fixture", () => assertGolden("minimal.json", buildJobManifest(minimal)));
  it("matches the maximal golden fixture", () => assertGolden("maximal.json", buildJobManifest(maximal)));

  it("matches the maximal-configuration golden fixture: every key of the runner configuration's pod set", async () => {
    assertGolden(
      "maximal-config.json",
      buildJobManifest({ ...maximal, extraContainers: [], pod: await readMaximalPodConfig() }),
    );
  });

  it("validates against the Kubernetes OpenAPI schema", async () => {
    for (const input of [minimal, maximal, { ...maximal, pod: await readMaximalPodConfig() }])
      assert.doesNotThrow(() => new Job(buildJobManifest(input)).validate());
  });

  it("puts the operator's placement, labels, annotations and pull secrets on the pod, the runner's own labels winning", () => {
    const job = buildJobManifest({
      ...minimal,
      placement: { nodeSelector: { "kubernetes.io/arch": "arm64" } },
      pod: {
        nodeSelector: { pool: "ci", "kubernetes.io/arch": "amd64" },
        tolerations: [{ key: "dedicated", operator: "Equal", value: "ci", effect: "NoSchedule" }],
        priorityClassName: "ci-low",
        runtimeClassName: "gvisor",
        labels: { team: "platform" },
        annotations: { "example.com/owner": "me" },
        imagePullSecrets: ["registry-credentials"],
      },
    });
    const spec = job.spec?.template.spec;
    assert.deepEqual(
      spec?.nodeSelector,
      { pool: "ci", "kubernetes.io/arch": "arm64" },
      "the workflow's architecture wins",
    );
    assert.deepEqual(spec?.tolerations, [{ key: "dedicated", operator: "Equal", value: "ci", effect: "NoSchedule" }]);
    assert.equal(spec?.priorityClassName, "ci-low");
    assert.equal(spec?.runtimeClassName, "gvisor");
    assert.deepEqual(spec?.imagePullSecrets, [{ name: "registry-credentials" }]);
    for (const metadata of [job.metadata, job.spec?.template.metadata]) {
      assert.equal(metadata?.labels?.team, "platform");
      assert.equal(metadata?.labels?.["app.kubernetes.io/managed-by"], "knotless-runner-k8s");
      assert.equal(metadata?.annotations?.["example.com/owner"], "me");
    }
    assert.equal(job.spec?.template.metadata?.annotations?.["cluster-autoscaler.kubernetes.io/safe-to-evict"], "false");
  });

  it("meets Pod Security Standard restricted under pod.security: restricted: a numeric non-root user, no capability, the runtime's seccomp profile", () => {
    const spec = buildJobManifest({ ...minimal, pod: { security: "restricted" } }).spec?.template.spec;
    assert.deepEqual(spec?.securityContext, {
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      fsGroup: 1000,
      seccompProfile: { type: "RuntimeDefault" },
    });
    assert.deepEqual(spec?.containers[0]?.securityContext, {
      allowPrivilegeEscalation: false,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    });
  });

  it("applies podSpecPatch last, by strategic merge, over the runner's spec", () => {
    const spec = buildJobManifest({
      ...minimal,
      pod: {
        priorityClassName: "a",
        podSpecPatch: {
          priorityClassName: "b",
          containers: [
            { name: "run", env: [{ name: "X", value: "1" }] },
            { name: "proxy", image: "envoy" },
          ],
        },
      },
    }).spec?.template.spec;
    assert.equal(spec?.priorityClassName, "b");
    assert.deepEqual(
      spec?.containers.map((c) => c.name),
      ["run", "proxy"],
    );
    assert.deepEqual(spec?.containers[0]?.env, [{ name: "X", value: "1" }]);
    assert.deepEqual(spec?.containers[0]?.command?.slice(0, 2), ["sh", "-c"]);
  });

  it("is caught by the schema check when a field is wrong", () => {
    const broken = buildJobManifest(minimal) as unknown as { spec: { backoffLimit: unknown } };
    broken.spec.backoffLimit = "zero";
    assert.throws(() => new Job(broken as never).validate());
  });

  it("never retries, never restarts and keeps no service account token", () => {
    const job = buildJobManifest(minimal);
    assert.equal(job.spec?.backoffLimit, 0);
    assert.equal(job.spec?.template.spec?.restartPolicy, "Never");
    assert.equal(job.spec?.template.spec?.automountServiceAccountToken, false);
  });

  it("hardens the run container by default: no privilege escalation, the runtime's seccomp profile, few capabilities", () => {
    const job = buildJobManifest(minimal);
    const spec = job.spec?.template.spec;
    assert.deepEqual(spec?.securityContext, { seccompProfile: { type: "RuntimeDefault" } });
    assert.deepEqual(spec?.containers[0]?.securityContext, {
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"], add: ["CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETGID", "SETUID"] },
    });
  });

  it("puts pod.ephemeralStorage on the run container's requests and limits, and none without it", () => {
    const table: Array<[storage: JobManifestInput["ephemeralStorage"], requests: object, limits: object]> = [
      [undefined, { cpu: "500m", memory: "512Mi" }, { memory: "512Mi" }],
      [
        { request: "2Gi", limit: "10Gi" },
        { cpu: "500m", memory: "512Mi", "ephemeral-storage": "2Gi" },
        { memory: "512Mi", "ephemeral-storage": "10Gi" },
      ],
      [{ limit: "10Gi" }, { cpu: "500m", memory: "512Mi" }, { memory: "512Mi", "ephemeral-storage": "10Gi" }],
      [{ request: "1Gi" }, { cpu: "500m", memory: "512Mi", "ephemeral-storage": "1Gi" }, { memory: "512Mi" }],
    ];
    for (const [ephemeralStorage, requests, limits] of table) {
      const resources = buildJobManifest({ ...minimal, ...(ephemeralStorage ? { ephemeralStorage } : {}) }).spec
        ?.template.spec?.containers[0]?.resources;
      assert.deepEqual([resources?.requests, resources?.limits], [requests, limits], JSON.stringify(ephemeralStorage));
    }
  });

  it("sets the server-side deadline to the run's budget plus a margin, and a TTL", () => {
    const job = buildJobManifest(minimal);
    assert.equal(job.spec?.activeDeadlineSeconds, 3600 + DEADLINE_MARGIN_SECONDS);
    assert.ok((job.spec?.ttlSecondsAfterFinished ?? 0) > 0);
  });

  it("labels the Job and its pod with the managed-by and run-id labels", () => {
    const job = buildJobManifest(maximal);
    for (const labels of [job.metadata?.labels, job.spec?.template.metadata?.labels]) {
      assert.equal(labels?.["app.kubernetes.io/managed-by"], "knotless-runner-k8s");
      assert.equal(labels?.["knotless.dev/run-id"], maximal.runIdLabel);
    }
  });

  it("requests the resources the autoscaler sizes the node from", () => {
    const container = buildJobManifest(maximal).spec?.template.spec?.containers[0];
    assert.deepEqual(container?.resources?.requests, { cpu: "2", memory: "4Gi", "ephemeral-storage": "2Gi" });
  });

  it("mounts only the repository's directory of the cache claim (its hash as subPath), and only when the PVC cache backend names a claim", () => {
    const without = buildJobManifest(minimal).spec?.template.spec;
    assert.equal(
      without?.volumes?.some((v) => v.persistentVolumeClaim !== undefined),
      false,
    );
    assert.equal(
      without?.containers[0]?.volumeMounts?.some((m) => m.mountPath.startsWith("/knotless-cache")),
      false,
    );
    const spec = buildJobManifest({ ...minimal, cacheClaim: { claim: "team-cache", repo: "did:plc:a/one" } }).spec
      ?.template.spec;
    const volume = spec?.volumes?.find((v) => v.persistentVolumeClaim !== undefined);
    assert.deepEqual(volume, { name: "cache", persistentVolumeClaim: { claimName: "team-cache" } });
    const hash = "e965d0d10c1c62f7bdcb3b76e8a4611406f035ef4cb30dc633db4074e222bba6";
    assert.deepEqual(
      spec?.containers[0]?.volumeMounts?.find((m) => m.name === volume?.name),
      { name: "cache", mountPath: `/knotless-cache/${hash}`, subPath: hash },
    );
    const other = buildJobManifest({ ...minimal, cacheClaim: { claim: "team-cache", repo: "did:plc:b/two" } }).spec
      ?.template.spec;
    assert.equal(
      other?.containers[0]?.volumeMounts?.find((m) => m.name === "cache")?.subPath,
      "d70c53a0fca540604f8ecb6f04ecfa373d2e965957d327f0e3d8d6f3e1fdd415",
      "another repository, another directory",
    );
    assert.throws(
      () => buildJobManifest({ ...minimal, cacheClaim: { claim: "team-cache", repo: "" } }),
      /repository is empty/,
    );
    assert.equal(new Set(spec?.volumes?.map((v) => v.name)).size, spec?.volumes?.length, "volume names are unique");
  });

  it("places the pod by architecture and runtime class only when asked, and runs the Docker daemon privileged beside the run container with /work", () => {
    const plain = buildJobManifest(minimal).spec?.template.spec;
    assert.equal(plain?.nodeSelector, undefined);
    assert.equal(plain?.runtimeClassName, undefined);
    assert.deepEqual(
      plain?.containers.map((c) => c.name),
      ["run"],
    );
    const spec = buildJobManifest(maximal).spec?.template.spec;
    assert.deepEqual(spec?.nodeSelector, { "kubernetes.io/arch": "amd64" });
    assert.equal(spec?.runtimeClassName, "kata");
    const docker = spec?.containers.find((c) => c.name === "docker");
    assert.deepEqual(
      [docker?.securityContext, docker?.env, docker?.volumeMounts],
      [{ privileged: true }, [{ name: "DOCKER_TLS_CERTDIR", value: "" }], [{ name: "work", mountPath: "/work" }]],
    );
  });

  it("mounts emptyDir volumes at /work, /steps, /outputs and /knotless, and a memory-backed one at /knotless-secrets", () => {
    const spec = buildJobManifest(minimal).spec?.template.spec;
    assert.deepEqual(
      spec?.containers[0]?.volumeMounts?.map((m) => m.mountPath),
      ["/work", "/steps", "/outputs", "/knotless", "/knotless-secrets"],
    );
    assert.ok(spec?.volumes?.every((v) => v.emptyDir !== undefined));
    assert.deepEqual(
      spec?.volumes?.map((v) => v.emptyDir?.medium ?? "disk"),
      ["disk", "disk", "disk", "disk", "Memory"],
    );
  });

  it("gives the container no env: the steps' variables reach them through files in the pod, never the Job", () => {
    assert.equal(buildJobManifest(maximal).spec?.template.spec?.containers[0]?.env, undefined);
  });
});

describe("buildRunManifest and the PVC cache backend", () => {
  const pvc = { kind: "pvc", repo: "r", claim: "ci-cache", maxBytes: 1 << 30 } as const;
  const caches = [{ key: "k", restoreKeys: [], paths: ["/work/deps"] }];
  const claimOf = (settings: RunSettings) =>
    buildRunManifest({ settings }, "t").spec?.template.spec?.volumes?.find((v) => v.persistentVolumeClaim)
      ?.persistentVolumeClaim?.claimName;

  it("mounts the claim of --cache-pvc for a run with caches, and none without caches or with the directory store", () => {
    const settings = exampleSettings({ steps: ["a"] });
    assert.equal(claimOf({ ...settings, caches, cacheBackend: pvc }), "ci-cache");
    assert.equal(
      claimOf({ ...settings, caches: [], cacheBackend: pvc }),
      undefined,
      "a run without caches does not wait for a claim it would not use",
    );
    assert.equal(
      claimOf({ ...settings, caches, cacheBackend: { kind: "dir", repo: "r", dir: "/tmp/c", maxBytes: 1 } }),
      undefined,
    );
  });
});
