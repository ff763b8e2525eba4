import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parseRunnerConfig, readRunnerConfig } from "../../src/config/read-runner-config.js";
import { DEFAULT_RUNNER_CONFIG } from "../../src/config/runner-config.js";
import { WorkflowError } from "../../src/workflow/workflow-errors.js";
import { makeTestTempDir } from "../support/temp-dir.js";

describe("the runner configuration file", () => {
  it("adds images to the defaults, short form without Nix, and sets the runtime class, the default image and privileged containers", async () => {
    const config = await parseRunnerConfig(
      "engines:\n  microvm:\n    defaultImage: debian\n    runtimeClassName: kata\n    images:\n      debian: debian:bookworm-slim\n      nixos: {image: nixos/nix:2.30.0, nix: true}\nallowPrivileged: true\ndocker: {image: docker:27-dind}\n",
      "ops.yml",
    );
    assert.deepEqual(config, {
      engines: {
        microvm: {
          images: {
            ...DEFAULT_RUNNER_CONFIG.engines.microvm.images,
            debian: { image: "debian:bookworm-slim", nix: false },
            nixos: { image: "nixos/nix:2.30.0", nix: true },
          },
          defaultImage: "debian",
          runtimeClassName: "kata",
        },
      },
      allowPrivileged: true,
      docker: { image: "docker:27-dind" },
      limits: { onExceed: "refuse" },
      pod: {},
    });
  });

  it("reads pod.ephemeralStorage, request and limit each optional", async () => {
    const table: Array<[text: string, pod: object]> = [
      [
        "pod:\n  ephemeralStorage: {request: 2Gi, limit: 10Gi}\n",
        { ephemeralStorage: { request: "2Gi", limit: "10Gi" } },
      ],
      ["pod:\n  ephemeralStorage: {limit: 10Gi}\n", { ephemeralStorage: { limit: "10Gi" } }],
      ["pod:\n  ephemeralStorage: {}\n", {}],
      ["pod: {}\n", {}],
    ];
    for (const [text, pod] of table) assert.deepEqual((await parseRunnerConfig(text, "ops.yml")).pod, pod, text);
  });

  it("reads pod.disruptionBudget as a boolean, absent when the file does not set it (the runs then have one)", async () => {
    assert.deepEqual((await parseRunnerConfig("pod:\n  disruptionBudget: false\n", "ops.yml")).pod, {
      disruptionBudget: false,
    });
    assert.deepEqual((await parseRunnerConfig("pod:\n  disruptionBudget: true\n", "ops.yml")).pod, {
      disruptionBudget: true,
    });
    assert.deepEqual((await parseRunnerConfig("pod: {}\n", "ops.yml")).pod, {});
    await assert.rejects(
      parseRunnerConfig("pod:\n  disruptionBudget: sometimes\n", "ops.yml"),
      (error: unknown) =>
        error instanceof WorkflowError &&
        /^ops\.yml:2:21: pod\.disruptionBudget: expected true or false/.test(error.message),
    );
  });

  it("reads limits: quantities, a duration, image patterns and what happens over them", async () => {
    const config = await parseRunnerConfig(
      "limits:\n  maxCpu: 4\n  maxMemory: 8Gi\n  maxTimeout: 30m\n  images: [docker.io/library/*, registry.example/ci/**]\n  onExceed: clamp\n",
      "ops.yml",
    );
    assert.deepEqual(config.limits, {
      maxCpu: "4",
      maxMemory: "8Gi",
      maxTimeoutMs: 1_800_000,
      images: ["docker.io/library/*", "registry.example/ci/**"],
      onExceed: "clamp",
    });
  });

  it("reads limits.nixery: the Nixery registries a nixery workflow's image may be composed on", async () => {
    const config = await parseRunnerConfig(
      "limits:\n  nixery: [nixery.dev, registry.example:5000/nixery/**]\n",
      "ops.yml",
    );
    assert.deepEqual(config.limits, { nixery: ["nixery.dev", "registry.example:5000/nixery/**"], onExceed: "refuse" });
  });

  it("refuses bad limits at their file:line:column", async () => {
    const table: Array<[text: string, message: string]> = [
      [
        "limits:\n  maxCpu: 100000\n",
        "ops.yml:2:11: limits.maxCpu: cpu 100000 is outside the bounds any run may ask for (from 1m to 1024 cores)",
      ],
      [
        "limits:\n  maxMemory: 999Ei\n",
        "ops.yml:2:14: limits.maxMemory: memory 999Ei is outside the bounds any run may ask for (from 4Mi to 64Ti)",
      ],
      [
        "limits:\n  maxCpu: many\n",
        'ops.yml:2:11: limits.maxCpu: expected a Kubernetes quantity such as 500m, 2 or 512Mi, found "many"',
      ],
      [
        "limits:\n  maxTimeout: forever\n",
        'ops.yml:2:15: limits.maxTimeout: expected a duration such as 90s, 10m or 1h30m, found "forever"',
      ],
      ["limits:\n  onExceed: ignore\n", 'ops.yml:2:13: limits.onExceed: expected refuse or clamp, found "ignore"'],
      [
        'limits:\n  images: ["bad image"]\n',
        'ops.yml:2:12: limits.images[0]: expected an image pattern such as docker.io/library/* or registry.example/ci/**, found "bad image"',
      ],
      [
        'limits:\n  nixery: ["nixery dev"]\n',
        'ops.yml:2:12: limits.nixery[0]: expected an image pattern such as docker.io/library/* or registry.example/ci/**, found "nixery dev"',
      ],
      [
        "limits:\n  nixery: nixery.dev\n",
        "ops.yml:2:11: limits.nixery: expected a list of registry patterns such as [nixery.dev, registry.example:5000/nixery], found a string",
      ],
      ["limits:\n  maxCPU: 4\n", "ops.yml:2:3: limits.maxCPU: unknown key; did you mean `maxCpu`?"],
      [
        "pod:\n  ephemeralStorage: {request: 20Gi, limit: 10Gi}\n",
        "ops.yml:2:31: pod.ephemeralStorage.request: 20Gi is more than the limit 10Gi; a request is at most its limit",
      ],
      [
        "pod:\n  ephemeralStorage: {limit: lots}\n",
        'ops.yml:2:29: pod.ephemeralStorage.limit: expected a Kubernetes quantity such as 10Gi, found "lots"',
      ],
    ];
    for (const [text, message] of table) {
      await assert.rejects(parseRunnerConfig(text, "ops.yml"), (error: unknown) => {
        assert.ok(error instanceof WorkflowError);
        assert.equal(error.message, message);
        return true;
      });
    }
  });

  it("is the defaults when empty or absent", async () => {
    assert.deepEqual(await parseRunnerConfig("", "ops.yml"), DEFAULT_RUNNER_CONFIG);
    assert.deepEqual(await readRunnerConfig(undefined), { config: DEFAULT_RUNNER_CONFIG });
  });

  it("reports every problem at its file:line:column", async () => {
    await assert.rejects(
      parseRunnerConfig(
        "engines:\n  microvm:\n    defaultImage: ubuntu\n    runtimeClassName: Kata_1\nallowPrivilege: true\n",
        "ops.yml",
      ),
      (error: unknown) => {
        assert.ok(error instanceof WorkflowError);
        assert.equal(
          error.message,
          [
            'ops.yml:3:19: engines.microvm.defaultImage: "ubuntu" is not one of the images: nixos, alpine, almalinux10',
            'ops.yml:4:23: engines.microvm.runtimeClassName: expected a RuntimeClass name such as kata or gvisor, found "Kata_1"',
            "ops.yml:5:1: allowPrivilege: unknown key; did you mean `allowPrivileged`?",
          ].join("\n"),
        );
        return true;
      },
    );
  });

  it("reads a file with the workflow files' bounds, and names the file it came from", async () => {
    const dir = makeTestTempDir("knotless-config-");
    writeFileSync(join(dir, "ops.yml"), "allowPrivileged: true\n");
    const source = await readRunnerConfig(join(dir, "ops.yml"));
    assert.equal(source.config.allowPrivileged, true);
    assert.equal(source.file, join(dir, "ops.yml"));
    await assert.rejects(
      readRunnerConfig("/dev/zero"),
      /^InputError: \/dev\/zero:1:1: --config: not a regular file but a character device/,
    );
  });

  it("reads every pod key and limit of the maximal example, in its typed shape", async () => {
    const text = readFileSync(new URL("../../../test/fixtures/runner-config/maximal.yml", import.meta.url), "utf8");
    const { pod, limits } = await parseRunnerConfig(text, "maximal.yml");
    assert.deepEqual(limits, {
      maxCpu: "4",
      maxMemory: "8Gi",
      maxTimeoutMs: 7_200_000,
      images: ["docker.io/library/*", "registry.example/ci/**"],
      nixery: ["nixery.dev", "registry.example:5000/nixery"],
      onExceed: "clamp",
    });
    assert.deepEqual(pod, {
      ephemeralStorage: { request: "2Gi", limit: "10Gi" },
      nodeSelector: { pool: "ci" },
      tolerations: [
        { key: "dedicated", operator: "Equal", value: "ci", effect: "NoSchedule" },
        { key: "node.kubernetes.io/unreachable", operator: "Exists", effect: "NoExecute", tolerationSeconds: 30 },
      ],
      affinity: {
        nodeAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 50,
              preference: {
                matchExpressions: [{ key: "topology.kubernetes.io/zone", operator: "In", values: ["zone-a"] }],
              },
            },
          ],
        },
      },
      priorityClassName: "ci-low",
      runtimeClassName: "gvisor",
      labels: { team: "platform", "example.com/cost-center": "ci" },
      annotations: { "example.com/owner": "platform@example.com" },
      imagePullSecrets: ["registry-credentials"],
      security: "restricted",
      podSpecPatch: {
        hostAliases: [{ ip: "10.0.0.5", hostnames: ["registry.local"] }],
        containers: [{ name: "run", env: [{ name: "HTTP_PROXY", value: "http://proxy.local:3128" }] }],
        dnsConfig: { options: [{ name: "ndots", value: "2" }] },
      },
    });
  });

  it("refuses bad pod keys at their file:line:column, the runner's own labels and what a patch may not touch among them", async () => {
    const table: Array<[text: string, message: string]> = [
      [
        "pod:\n  labels: {app.kubernetes.io/managed-by: me}\n",
        'ops.yml:2:12: pod.labels["app.kubernetes.io/managed-by"]: app.kubernetes.io/managed-by is the runner\'s own label (it finds and tells its objects apart by it): choose another key',
      ],
      [
        "pod:\n  annotations: {knotless.dev/owner: me}\n",
        'ops.yml:2:17: pod.annotations["knotless.dev/owner"]: knotless.dev/owner is the runner\'s own annotation (it finds and tells its objects apart by it): choose another key',
      ],
      [
        'pod:\n  labels: {team: "a b"}\n',
        "ops.yml:2:18: pod.labels.team: expected a label value: at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit, found \"a b\"",
      ],
      [
        'pod:\n  nodeSelector: {"bad key!": x}\n',
        "ops.yml:2:18: pod.nodeSelector[\"bad key!\"]: expected a key such as example.com/team or team (a name of at most 63 letters, digits, '-', '_' and '.', with an optional DNS prefix and '/'), found \"bad key!\"",
      ],
      [
        "pod:\n  tolerations:\n    - {key: a, operator: Exists, value: b}\n",
        "ops.yml:3:41: pod.tolerations[0].value: a toleration with operator Exists takes no value",
      ],
      [
        "pod:\n  tolerations:\n    - {key: a, effect: NoWay}\n",
        'ops.yml:3:24: pod.tolerations[0].effect: expected NoSchedule, PreferNoSchedule or NoExecute, found "NoWay"',
      ],
      [
        "pod:\n  imagePullSecrets: [Registry]\n",
        'ops.yml:2:22: pod.imagePullSecrets[0]: expected a Kubernetes object name such as registry-credentials, found "Registry"',
      ],
      ["pod:\n  security: strict\n", 'ops.yml:2:13: pod.security: expected default or restricted, found "strict"'],
      [
        "pod:\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n          - matchExpressions: [{key: a, operator: Near}]\n",
        "ops.yml:6:51: pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: expected it to be one of: DoesNotExist, Exists, Gt, In, Lt, NotIn",
      ],
      [
        "pod:\n  podSpecPatch:\n    containers:\n      - name: run\n        command: [sleep, infinity]\n",
        "ops.yml:5:18: pod.podSpecPatch.containers[0].command: the run container's command is the runner's (its keep-alive runs the steps): it cannot be patched",
      ],
      [
        "pod:\n  podSpecPatch:\n    restartPolicy: Always\n",
        "ops.yml:3:20: pod.podSpecPatch.restartPolicy: restartPolicy is the runner's (Never: a restarted container would lose the run's files)",
      ],
      [
        "pod:\n  podSpecPatch:\n    volumes: [{name: secrets, emptyDir: {}}]\n",
        'ops.yml:3:22: pod.podSpecPatch.volumes[0].name: volume "secrets" is the runner\'s (work, steps, outputs, knotless, secrets, cache): it cannot be patched',
      ],
      [
        "pod:\n  podSpecPatch:\n    nodeselector: {a: b}\n",
        "ops.yml:3:5: pod.podSpecPatch.nodeselector: not a key of the pod spec; unknown key; did you mean `nodeSelector`?",
      ],
      [
        "pod:\n  podSpecPatch:\n    terminationGracePeriodSeconds: soon\n",
        "ops.yml:3:36: pod.podSpecPatch.terminationGracePeriodSeconds: expected it to be integer",
      ],
    ];
    for (const [text, message] of table) {
      await assert.rejects(parseRunnerConfig(text, "ops.yml"), (error: unknown) => {
        assert.ok(error instanceof WorkflowError, text);
        assert.equal(error.message, message);
        return true;
      });
    }
  });
});
