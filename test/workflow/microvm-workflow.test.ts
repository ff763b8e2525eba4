import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_RUNNER_CONFIG, type RunnerConfig } from "../../src/config/runner-config.js";
import { NIX_INSTALL_STEP_NAME } from "../../src/pod/nix-install.js";
import { resolveWorkflow, type ResolvedWorkflow } from "../../src/settings/resolve-workflow.js";
import { formatIssue } from "../../src/workflow/workflow-errors.js";
import { parseErrors, parseOk } from "./workflow-fixtures.js";

const STEPS = "steps:\n  - name: build\n    command: make\n";

function withConfig(change: Partial<RunnerConfig>): { config: RunnerConfig; file: string } {
  return { config: { ...DEFAULT_RUNNER_CONFIG, ...change }, file: "ops.yml" };
}

function resolveOk(text: string, runner?: { config: RunnerConfig; file?: string }): ResolvedWorkflow {
  const result = resolveWorkflow(parseOk(text), runner ? { runner } : {});
  assert.ok(result.ok, result.ok ? "" : result.errors.map(formatIssue).join("\n"));
  return result.workflow;
}

function resolveErrors(text: string, runner?: { config: RunnerConfig; file?: string }): string[] {
  const result = resolveWorkflow(parseOk(text), runner ? { runner } : {});
  assert.ok(!result.ok, "expected errors");
  return result.errors.map(formatIssue);
}

describe("the microvm engine", () => {
  it("maps image names through the runner configuration's defaults: nixos to an image with Nix, alpine and almalinux10 to theirs", () => {
    assert.deepEqual(
      ["nixos", "alpine", "almalinux10"]
        .map((name) => resolveOk(`engine: microvm\nimage: ${name}\n${STEPS}`))
        .map((w) => [w.imageName, w.image, w.imageFrom]),
      [
        ["nixos", "docker.io/nixos/nix:2.28.4", "microvm"],
        ["alpine", "docker.io/library/alpine:3.22", "microvm"],
        ["almalinux10", "docker.io/library/almalinux:10", "microvm"],
      ],
    );
  });

  it("uses the configured default image when the workflow names none, and the configured runtimeClassName", () => {
    const runner = withConfig({
      engines: {
        microvm: { ...DEFAULT_RUNNER_CONFIG.engines.microvm, defaultImage: "alpine", runtimeClassName: "kata" },
      },
    });
    const workflow = resolveOk(`engine: microvm\n${STEPS}`, runner);
    assert.equal(workflow.image, "docker.io/library/alpine:3.22");
    assert.deepEqual(workflow.placement, { runtimeClassName: "kata" });
  });

  it("refuses an image name the configuration does not map, naming the names and the setting", () => {
    assert.deepEqual(resolveErrors(`engine: microvm\nimage: ubuntu\n${STEPS}`, withConfig({})), [
      'wf.yml:2:8: image: the microvm image "ubuntu" is not one this runner maps to a container image (nixos, alpine, almalinux10); add it under engines.microvm.images in --config ops.yml',
    ]);
  });

  it("installs a NixOS image's dependencies with Nix in a first step: bare names from nixpkgs, flake references as written, expressions", () => {
    const workflow = resolveOk(
      `engine: microvm\nimage: nixos\ndependencies:\n  - go\n  - github:nixos/nixpkgs#hello\n  - "python3.withPackages (p: [p.requests])"\n${STEPS}`,
    );
    assert.deepEqual(
      workflow.steps.map((step) => [step.name, step.source]),
      [
        [NIX_INSTALL_STEP_NAME, "wf.yml:4"],
        ["build", "wf.yml:8"],
      ],
    );
    assert.match(
      workflow.steps[0]!.command,
      /^nix profile install --profile \/nix\/var\/nix\/profiles\/knotless-dependencies 'nixpkgs#go' 'github:nixos\/nixpkgs#hello'$/m,
    );
    assert.match(
      workflow.steps[0]!.command,
      /^nix profile install --profile \/nix\/var\/nix\/profiles\/knotless-dependencies --impure --expr 'with \(builtins\.getFlake "nixpkgs"\)\.legacyPackages\.\$\{builtins\.currentSystem\}; \(python3\.withPackages \(p: \[p\.requests\]\)\)'$/m,
    );
  });

  it("takes the nixpkgs map form on microvm too, every registry installed with Nix", () => {
    const workflow = resolveOk(
      `engine: microvm\ndependencies:\n  nixpkgs: [go]\n  nixpkgs/nixpkgs-unstable: [bun]\n${STEPS}`,
    );
    assert.match(
      workflow.steps[0]!.command,
      /^nix profile install --profile \/nix\/var\/nix\/profiles\/knotless-dependencies 'nixpkgs#go' 'nixpkgs\/nixpkgs-unstable#bun'$/m,
    );
  });

  it("refuses dependencies and virtualisation on an image without Nix, as installing them is Nix's", () => {
    assert.deepEqual(
      resolveErrors(
        `engine: microvm\nimage: alpine\ndependencies: [go]\nvirtualisation: {docker: true}\n${STEPS}`,
        withConfig({ allowPrivileged: true }),
      ),
      [
        'wf.yml:3:15: dependencies: are installed with Nix on a NixOS image only, and the microvm image "alpine" is not one; install them in a step (apk add, dnf install), or use a NixOS image',
        'wf.yml:4:18: virtualisation.docker: configures a NixOS image, and the microvm image "alpine" is not one; use a NixOS image',
      ],
    );
  });

  it("refuses virtualisation.docker where the configuration does not allow privileged containers, naming the setting", () => {
    assert.deepEqual(
      resolveErrors(`engine: microvm\nimage: nixos\nvirtualisation:\n  docker: true\n${STEPS}`, withConfig({})),
      [
        "wf.yml:4:3: virtualisation.docker: needs a privileged container (the Docker daemon), which this runner does not allow; the operator allows it with allowPrivileged: true in --config ops.yml",
      ],
    );
  });

  it("refuses virtualisation.docker under pod.security: restricted, which forbids the privileged daemon, naming the setting", () => {
    assert.deepEqual(
      resolveErrors(
        `engine: microvm\nimage: nixos\nvirtualisation:\n  docker: true\n${STEPS}`,
        withConfig({ allowPrivileged: true, pod: { security: "restricted" } }),
      ),
      [
        'wf.yml:4:3: virtualisation.docker: needs a privileged container (the Docker daemon), which pod.security: restricted in --config ops.yml forbids (Pod Security Standard "restricted"); use a runner configured with the default profile',
      ],
    );
    const flagged = {
      ...withConfig({ allowPrivileged: true, pod: { security: "restricted" } }),
      podFlags: ["security" as const],
    };
    assert.match(
      resolveErrors(`engine: microvm\nimage: nixos\nvirtualisation:\n  docker: true\n${STEPS}`, flagged)[0]!,
      /which --security-profile restricted forbids/,
    );
  });

  it("runs a Docker daemon of the configured image where privileged containers are allowed, also written as {enable: true}", () => {
    const runner = withConfig({ allowPrivileged: true, docker: { image: "docker:27-dind" } });
    assert.deepEqual(
      resolveOk(`engine: microvm\nvirtualisation: {docker: {enable: true}}\n${STEPS}`, runner).dockerDaemon,
      { image: "docker:27-dind" },
    );
    assert.equal(
      resolveOk(`engine: microvm\nvirtualisation: {docker: false}\n${STEPS}`, runner).dockerDaemon,
      undefined,
    );
  });

  it("refuses every other virtualisation option and every service by name", () => {
    assert.deepEqual(
      parseErrors(
        `engine: microvm\nvirtualisation:\n  podman: true\nservices:\n  postgresql:\n    enable: true\n${STEPS}`,
      ),
      [
        "wf.yml:3:3: virtualisation.podman: virtualisation.podman is not supported by this runner; only virtualisation.docker (a Docker daemon beside the steps) is",
        "wf.yml:5:3: services.postgresql: services.postgresql is not supported by this runner: NixOS services need a NixOS guest, and the run is a container; start it in a step, or run it in a container with virtualisation.docker",
      ],
    );
  });

  it("refuses the microvm keys on another engine", () => {
    assert.deepEqual(
      parseErrors(`engine: kubernetes\nregistry: {nixpkgs: github:nixos/nixpkgs/nixos-unstable}\n${STEPS}`),
      [
        "wf.yml:2:11: registry: configures a NixOS image of the microvm engine; this workflow's engine is kubernetes: set engine: microvm with a NixOS image, or remove it",
      ],
    );
  });

  it("makes a list of dependencies without an engine a microvm workflow", () => {
    assert.equal(parseOk(`dependencies: [go]\n${STEPS}`).engine, "microvm");
  });
});

describe("nixery registries other than nixpkgs, and engine kubernetes with an architecture", () => {
  it("composes the Nixery image from nixpkgs and installs the other registries' packages with Nix first", () => {
    const result = resolveWorkflow(
      parseOk(
        `engine: nixery\ndependencies:\n  nixpkgs: [curl]\n  github:NixOS/nixpkgs/nixpkgs-unstable: [zig_0_16]\n${STEPS}`,
      ),
      { nixeryBase: "nixery.dev" },
    );
    assert.ok(result.ok);
    assert.equal(result.workflow.image, "nixery.dev/curl/bash/git/coreutils/nix/gnutar/findutils/gnugrep/util-linux");
    assert.match(
      result.workflow.steps[0]!.command,
      /^nix profile install --profile \/nix\/var\/nix\/profiles\/knotless-dependencies 'github:NixOS\/nixpkgs\/nixpkgs-unstable#zig_0_16'$/m,
    );
  });

  it("puts architecture in the node selector on kubernetes.io/arch", () => {
    assert.deepEqual(
      resolveOk(`engine: kubernetes\nimage: quay.io/buildah/stable:latest\narchitecture: amd64\n${STEPS}`).placement,
      { nodeSelector: { "kubernetes.io/arch": "amd64" } },
    );
    assert.deepEqual(parseErrors(`architecture: x86_64\n${STEPS}`), [
      'wf.yml:1:15: architecture: expected an architecture as Kubernetes names it: amd64, arm64, arm, 386, ppc64le, s390x or riscv64, found "x86_64"',
    ]);
  });
});
