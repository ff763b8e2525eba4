// The Pod YAML handed to podman keeps what podman honours and marks what it cannot.

import assert from "node:assert/strict";
import { test } from "node:test";
import { parse } from "yaml";
import { buildPodmanPod } from "../../local-cluster/podman-pod-yaml.js";
import type { KubeObject } from "../../local-cluster/types.js";

const pod = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name: "run-abcde",
    namespace: "ci",
    uid: "u",
    resourceVersion: "1",
    creationTimestamp: "",
    labels: { "job-name": "run" },
  },
  spec: {
    restartPolicy: "Never",
    volumes: [
      { name: "work", emptyDir: {} },
      { name: "creds", secret: { secretName: "s" } },
    ],
    containers: [
      {
        name: "run",
        image: "docker.io/library/busybox:1.36",
        command: ["sh", "-c", "sleep 1"],
        workingDir: "/work",
        env: [
          { name: "A", value: "1" },
          { name: "TOKEN", valueFrom: { secretKeyRef: { name: "s", key: "token" } } },
          { name: "POD", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
        ],
        volumeMounts: [{ name: "work", mountPath: "/work" }],
      },
    ],
  },
} as KubeObject;

test("the podman pod carries the instance label, the container and resolved env", () => {
  const plan = buildPodmanPod({
    pod,
    podmanName: "lc-x-ci-run-abcde",
    extraLabels: { "io.knotless.local-cluster": "x" },
    lookup: (kind, name, key) =>
      kind === "secret" && name === "s" && key === "token" ? "t0k" : kind === "field" ? "run-abcde" : undefined,
  });
  const doc = parse(plan.yaml);
  assert.equal(doc.metadata.name, "lc-x-ci-run-abcde");
  assert.equal(doc.metadata.labels["io.knotless.local-cluster"], "x");
  assert.equal(doc.spec.hostname, "run-abcde");
  assert.equal(doc.spec.containers[0].imagePullPolicy, "IfNotPresent");
  assert.deepEqual(doc.spec.containers[0].env, [
    { name: "A", value: "1" },
    { name: "TOKEN", value: "t0k" },
    { name: "POD", value: "run-abcde" },
  ]);
  assert.deepEqual(plan.containerNames, { run: "lc-x-ci-run-abcde-run" });
});

test("each pod gets its own volumes, and ones other than emptyDir become empty directories with a warning", () => {
  const plan = buildPodmanPod({ pod, podmanName: "p", extraLabels: {}, lookup: () => undefined });
  assert.deepEqual(parse(plan.yaml).spec.volumes, [
    { name: "p-work", emptyDir: {} },
    { name: "p-creds", emptyDir: {} },
  ]);
  assert.deepEqual(parse(plan.yaml).spec.containers[0].volumeMounts, [{ name: "p-work", mountPath: "/work" }]);
  assert.deepEqual(plan.volumeNames, ["p-work", "p-creds"]);
  assert.ok(plan.warnings.some((w) => w.startsWith("volume creds")));
});

test("an emptyDir with medium Memory is made as tmpfs before kube play, and every emptyDir when the cluster keeps them in memory", () => {
  const withMemory = {
    ...pod,
    spec: {
      ...pod.spec,
      volumes: [
        { name: "work", emptyDir: {} },
        { name: "secrets", emptyDir: { medium: "Memory" } },
      ],
    },
  };
  assert.deepEqual(
    buildPodmanPod({ pod: withMemory, podmanName: "p", extraLabels: {}, lookup: () => undefined }).memoryVolumeNames,
    ["p-secrets"],
  );
  assert.deepEqual(
    buildPodmanPod({
      pod: withMemory,
      podmanName: "p",
      extraLabels: {},
      lookup: () => undefined,
      emptyDirsInMemory: true,
    }).memoryVolumeNames,
    ["p-work", "p-secrets"],
  );
});

test("a claim volume becomes a hostPath bind of the claim's directory, read-only when the claim says so, and is no podman volume", () => {
  const withClaims = structuredClone(pod);
  withClaims.spec.volumes = [
    { name: "work", emptyDir: {} },
    { name: "cache", persistentVolumeClaim: { claimName: "c1" } },
    { name: "seed", persistentVolumeClaim: { claimName: "c2", readOnly: true } },
  ];
  withClaims.spec.containers[0].volumeMounts = [
    { name: "work", mountPath: "/work" },
    { name: "cache", mountPath: "/knotless-cache" },
    { name: "seed", mountPath: "/seed" },
  ];
  const plan = buildPodmanPod({
    pod: withClaims,
    podmanName: "lc-x-ci-run-abcde",
    extraLabels: {},
    lookup: () => undefined,
    claimDirectories: { c1: "/claims/ci/c1-u1", c2: "/claims/ci/c2-u2" },
  });
  const doc = parse(plan.yaml);
  assert.deepEqual(doc.spec.volumes, [
    { name: "lc-x-ci-run-abcde-work", emptyDir: {} },
    { name: "lc-x-ci-run-abcde-cache", hostPath: { path: "/claims/ci/c1-u1", type: "Directory" } },
    { name: "lc-x-ci-run-abcde-seed", hostPath: { path: "/claims/ci/c2-u2", type: "Directory" } },
  ]);
  assert.deepEqual(doc.spec.containers[0].volumeMounts, [
    { name: "lc-x-ci-run-abcde-work", mountPath: "/work" },
    { name: "lc-x-ci-run-abcde-cache", mountPath: "/knotless-cache" },
    { name: "lc-x-ci-run-abcde-seed", mountPath: "/seed", readOnly: true },
  ]);
  assert.deepEqual(plan.volumeNames, ["lc-x-ci-run-abcde-work"]);
  assert.deepEqual(
    plan.warnings.filter((w) => w.startsWith("volume")),
    [],
    "no volume is replaced by an empty directory",
  );
});

test("a claim mounted with a subPath becomes a hostPath bind of that directory only; an unsafe subPath or one on an emptyDir is a warning", () => {
  const withSub = structuredClone(pod);
  withSub.spec.volumes = [
    { name: "work", emptyDir: {} },
    { name: "cache", persistentVolumeClaim: { claimName: "c1" } },
  ];
  withSub.spec.containers[0].volumeMounts = [
    { name: "work", mountPath: "/work", subPath: "x" },
    { name: "cache", mountPath: "/knotless-cache/aa", subPath: "aa" },
    { name: "cache", mountPath: "/escape", subPath: "../other" },
  ];
  const plan = buildPodmanPod({
    pod: withSub,
    podmanName: "p",
    extraLabels: {},
    lookup: () => undefined,
    claimDirectories: { c1: "/claims/ci/c1-u1" },
  });
  const doc = parse(plan.yaml);
  assert.deepEqual(doc.spec.volumes, [
    { name: "p-work", emptyDir: {} },
    { name: "p-cache", hostPath: { path: "/claims/ci/c1-u1", type: "Directory" } },
    { name: "p-cache-sub0", hostPath: { path: "/claims/ci/c1-u1/aa", type: "Directory" } },
  ]);
  assert.deepEqual(doc.spec.containers[0].volumeMounts, [
    { name: "p-work", mountPath: "/work" },
    { name: "p-cache-sub0", mountPath: "/knotless-cache/aa" },
    { name: "p-cache", mountPath: "/escape" },
  ]);
  assert.deepEqual(plan.volumeNames, ["p-work"], "the subPath's directory is the claim's, no podman volume");
  assert.equal(plan.warnings.filter((w) => w.includes("subPath")).length, 2, plan.warnings.join("\n"));
});

test("the podman pod keeps the securityContext podman honours and warns about the rest", () => {
  const hardened = structuredClone(pod) as any;
  hardened.spec.securityContext = { seccompProfile: { type: "RuntimeDefault" }, fsGroup: 1000 };
  hardened.spec.containers[0].securityContext = {
    allowPrivilegeEscalation: false,
    capabilities: { drop: ["ALL"], add: ["CHOWN"] },
    procMount: "Default",
  };
  const plan = buildPodmanPod({ pod: hardened, podmanName: "lc-x-ci-run-abcde", extraLabels: {}, lookup: () => "" });
  const doc = parse(plan.yaml);
  assert.deepEqual(doc.spec.securityContext, { seccompProfile: { type: "RuntimeDefault" } });
  assert.deepEqual(doc.spec.containers[0].securityContext, {
    allowPrivilegeEscalation: false,
    capabilities: { drop: ["ALL"], add: ["CHOWN"] },
  });
  assert.ok(
    plan.warnings.includes("pod securityContext.fsGroup is not honoured by the local cluster"),
    plan.warnings.join("; "),
  );
  assert.ok(
    plan.warnings.includes("container run: securityContext.procMount is not honoured by the local cluster"),
    plan.warnings.join("; "),
  );
});
