import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { applyPodFlags, findPodFlag, layPodFlags, readPodFlags } from "../../src/cli/pod-options.js";
import { DEFAULT_RUNNER_CONFIG, type RunnerConfigSource } from "../../src/config/runner-config.js";
import { InputError } from "../../src/core/errors.js";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeWorkspace, runCliInProcess } from "../support/run-cli.js";

describe("the pod flags", () => {
  it("read every pod key an operator sets per invocation, in its typed shape", () => {
    assert.deepEqual(
      readPodFlags({
        nodeSelector: ["pool=ci", "kubernetes.io/os=linux"],
        toleration: ["dedicated=ci:NoSchedule", "node.kubernetes.io/unreachable:NoExecute"],
        priorityClass: "ci-low",
        runtimeClass: "gvisor",
        imagePullSecret: ["registry-a", "registry-b"],
        podLabel: ["team=platform"],
        podAnnotation: ["example.com/owner=platform@example.com"],
        securityProfile: "restricted",
        ephemeralStorage: "2Gi:10Gi",
      }),
      {
        nodeSelector: { pool: "ci", "kubernetes.io/os": "linux" },
        tolerations: [
          { key: "dedicated", operator: "Equal", value: "ci", effect: "NoSchedule" },
          { key: "node.kubernetes.io/unreachable", operator: "Exists", effect: "NoExecute" },
        ],
        priorityClassName: "ci-low",
        runtimeClassName: "gvisor",
        labels: { team: "platform" },
        annotations: { "example.com/owner": "platform@example.com" },
        imagePullSecrets: ["registry-a", "registry-b"],
        security: "restricted",
        ephemeralStorage: { request: "2Gi", limit: "10Gi" },
      },
    );
    assert.deepEqual(readPodFlags({ ephemeralStorage: ":10Gi" }), { ephemeralStorage: { limit: "10Gi" } });
    assert.deepEqual(readPodFlags({}), {});
  });

  it("refuse bad values as bad input naming the flag", () => {
    const table: Array<[raw: Parameters<typeof readPodFlags>[0], message: RegExp]> = [
      [{ nodeSelector: ["pool"] }, /^--node-selector expects KEY=VALUE, got "pool"$/],
      [{ nodeSelector: ["pool=a b"] }, /^--node-selector pool=: expects a label value of at most 63/],
      [{ nodeSelector: ["-bad=x"] }, /^--node-selector expects a key such as example\.com\/team/],
      [
        { toleration: ["dedicated=ci"] },
        /^--toleration expects KEY\[=VALUE\]:EFFECT with EFFECT NoSchedule, PreferNoSchedule or NoExecute/,
      ],
      [{ toleration: ["dedicated=ci:NoRun"] }, /^--toleration expects KEY\[=VALUE\]:EFFECT/],
      [{ priorityClass: "CI_Low" }, /^--priority-class expects a Kubernetes object name such as ci-low/],
      [{ runtimeClass: "" }, /^--runtime-class expects a Kubernetes object name/],
      [{ imagePullSecret: ["Registry"] }, /^--image-pull-secret expects a Kubernetes object name/],
      [{ podLabel: ["knotless.dev/run-id=x"] }, /^--pod-label: knotless\.dev\/run-id is the runner's own label/],
      [
        { podAnnotation: ["cluster-autoscaler.kubernetes.io/safe-to-evict=true"] },
        /^--pod-annotation: cluster-autoscaler\.kubernetes\.io\/safe-to-evict is the runner's own annotation/,
      ],
      [{ securityProfile: "privileged" }, /^--security-profile expects default or restricted, got "privileged"$/],
      [{ ephemeralStorage: "lots" }, /^--ephemeral-storage expects REQUEST\[:LIMIT\] as Kubernetes quantities/],
      [{ ephemeralStorage: "10Gi:2Gi" }, /^--ephemeral-storage: the request 10Gi is more than the limit 2Gi/],
      [{ ephemeralStorage: ":" }, /^--ephemeral-storage expects REQUEST\[:LIMIT\]/],
    ];
    for (const [raw, message] of table) {
      assert.throws(
        () => readPodFlags(raw),
        (error: unknown) => error instanceof InputError && message.test(error.message),
        String(message),
      );
    }
  });

  it("lie over the file: scalars and ephemeral storage replace, maps set their keys, lists add what is new", () => {
    const file = {
      ephemeralStorage: { request: "1Gi", limit: "2Gi" },
      nodeSelector: { pool: "ci", zone: "a" },
      tolerations: [{ key: "dedicated", operator: "Equal" as const, value: "ci", effect: "NoSchedule" as const }],
      priorityClassName: "ci-low",
      labels: { team: "platform" },
      imagePullSecrets: ["registry-a"],
      security: "restricted" as const,
    };
    const flags = readPodFlags({
      ephemeralStorage: ":5Gi",
      nodeSelector: ["pool=gpu"],
      toleration: ["dedicated=ci:NoSchedule", "gpu:NoSchedule"],
      priorityClass: "ci-high",
      imagePullSecret: ["registry-a", "registry-b"],
      securityProfile: "default",
      podAnnotation: ["a=b"],
    });
    const laid = layPodFlags(file, flags);
    assert.deepEqual(laid, {
      ephemeralStorage: { limit: "5Gi" },
      nodeSelector: { pool: "gpu", zone: "a" },
      tolerations: [file.tolerations[0], { key: "gpu", operator: "Exists", effect: "NoSchedule" }],
      priorityClassName: "ci-high",
      labels: { team: "platform" },
      annotations: { a: "b" },
      imagePullSecrets: ["registry-a", "registry-b"],
      security: "default",
    });
    assert.deepEqual(Object.keys(laid), [
      "ephemeralStorage",
      "nodeSelector",
      "tolerations",
      "priorityClassName",
      "labels",
      "annotations",
      "imagePullSecrets",
      "security",
    ]);
    assert.deepEqual(layPodFlags(file, {}), file);
    const source: RunnerConfigSource = { config: DEFAULT_RUNNER_CONFIG, file: "ops.yml" };
    assert.equal(applyPodFlags(source, {}), source);
    const applied = applyPodFlags(source, { securityProfile: "restricted", podLabel: ["a=b"] });
    assert.deepEqual(
      [applied.config.pod, applied.podFlags],
      [{ labels: { a: "b" }, security: "restricted" }, ["labels", "security"]],
    );
  });

  it("name the first one given, for messages that say where a flag goes", () => {
    assert.equal(findPodFlag({ imagePullSecret: ["x"] }), "--image-pull-secret");
    assert.equal(findPodFlag({}), undefined);
  });

  it("reach run's dry run through the CLI, and a bad one is exit 2 naming the flag", async () => {
    const ws = makeWorkspace("");
    const workflow = join(ws.out, "..", "ci.yml");
    writeFileSync(workflow, "image: busybox:1.36\nsteps:\n  - name: a\n    command: echo hi\n");
    const base = [
      "run",
      "--workflow",
      workflow,
      "--checkout",
      ws.checkout,
      "--out",
      ws.out,
      "--namespace",
      "ci",
      "--kubectl",
      "/nonexistent/kubectl",
    ];
    const dry = await runCliInProcess([
      ...base,
      "--dry-run",
      "--node-selector",
      "pool=ci",
      "--toleration",
      "dedicated=ci:NoSchedule",
      "--security-profile",
      "restricted",
      "--ephemeral-storage",
      "1Gi:4Gi",
    ]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /^# {3}pod\.nodeSelector: pool=ci$/m);
    assert.match(dry.stdout, /^# {3}pod\.tolerations: dedicated=ci:NoSchedule$/m);
    assert.match(dry.stdout, /^# {3}pod security: restricted /m);
    assert.match(dry.stdout, /^# {3}ephemeral storage: request 1Gi, limit 4Gi/m);
    const bad = await runCliInProcess([...base, "--runtime-class", "Kata!"]);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /--runtime-class expects a Kubernetes object name such as gvisor/);
  });
});
