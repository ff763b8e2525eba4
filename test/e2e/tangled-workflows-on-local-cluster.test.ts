// End to end on the local cluster: Tangled's microvm workflows mapped to the local images, a Nix install against a
// recording stand-in `nix`, virtualisation.docker allowed and refused, and Tangled's run variables for a push and a pull request.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { promisify } from "node:util";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { E2E_KUBECTLS, findPodmanSkipReason } from "../support/local-cluster-e2e.js";
import { makeWorkspace, readResult, runCli } from "../support/run-cli.js";

const KUBECTL = E2E_KUBECTLS.at(-1) ?? "kubectl";
const BUSYBOX = "docker.io/library/busybox:1.36";
const DEBIAN = "docker.io/library/debian:bookworm-slim";
const REPO_FLAGS = [
  "--knot",
  "knot.example.org",
  "--repo-did",
  "did:plc:abc",
  "--repo-name",
  "core",
  "--default-branch",
  "main",
  "--pipeline-id",
  "at://did:web:spindle.example.org/sh.tangled.pipeline/3kx",
];

function findSkipReason(): string | false {
  const podman = findPodmanSkipReason();
  if (podman) return podman;
  const missing = [BUSYBOX, DEBIAN].find(
    (image) => spawnSync("podman", ["image", "exists", image], { stdio: "ignore" }).status !== 0,
  );
  return missing ? `the local ${missing} image is not there (scripts/setup-containers.sh makes it)` : false;
}

/**
 * The runner configuration of these tests: `alpine` is the local busybox, `nixos` the local Debian image said to have
 * Nix, and the "Docker daemon" the Debian image (no dind image here: its container runs `bash` and ends, which leaves
 * the pod running; what is checked is that it is in the pod as configured, and that the steps get DOCKER_HOST).
 */
function writeConfig(dir: string, allowPrivileged: boolean): string {
  const file = join(dir, `config-${allowPrivileged}.yml`);
  writeFileSync(
    file,
    [
      "engines:",
      "  microvm:",
      "    images:",
      `      alpine: ${BUSYBOX}`,
      `      nixos: {image: ${DEBIAN}, nix: true}`,
      `allowPrivileged: ${allowPrivileged}`,
      `docker: {image: ${DEBIAN}}`,
      "",
    ].join("\n"),
  );
  return file;
}

const PRINT_TANGLED = "env | grep '^TANGLED_' | sort";

/** kubectl's JSON answer, asynchronously: the local cluster serves from this process, so a synchronous spawn would stall it. */
async function getJson<T>(kubeconfig: string, args: readonly string[]): Promise<T> {
  const { stdout } = await promisify(execFile)(
    KUBECTL,
    ["--kubeconfig", kubeconfig, "-n", "ci", ...args, "-o", "json"],
    { encoding: "utf8" },
  );
  return JSON.parse(stdout) as T;
}

describe("Tangled workflows on the local cluster", { skip: findSkipReason(), timeout: 600_000 }, () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await startLocalCluster({ namespace: "ci" });
  });
  after(async () => {
    await cluster?.stop();
  });

  it("runs a microvm alpine workflow on the image the configuration maps and a NixOS one whose install step and Docker daemon come first, with Tangled's variables for a push and a pull request", async () => {
    const ws = makeWorkspace("");
    const dir = join(ws.out, "..");
    // The stand-in nix records each call's words (bracketed, so quoting shows) and the NIX_CONFIG it saw.
    mkdirSync(join(ws.checkout, "bin"));
    writeFileSync(
      join(ws.checkout, "bin", "nix"),
      '#!/bin/sh\n{ for word in "$@"; do printf "[%s]" "$word"; done; echo; } >> /outputs/nix-calls.txt\nprintf "%s\\n---\\n" "$NIX_CONFIG" >> /outputs/nix-config.txt\n',
    );
    chmodSync(join(ws.checkout, "bin", "nix"), 0o755);
    const alpine = join(dir, "alpine.yml");
    writeFileSync(
      alpine,
      [
        "when:",
        "  - event: push",
        "    branch: main",
        "engine: microvm",
        "image: alpine",
        "steps:",
        "  - name: where",
        "    command: |",
        '      echo "uid=$(id -u) pwd=$(pwd) busybox=$(busybox | head -1 | cut -d" " -f1)"',
        `      ${PRINT_TANGLED}`,
        "",
      ].join("\n"),
    );
    const nixos = join(dir, "nixos.yml");
    writeFileSync(
      nixos,
      [
        "when:",
        "  - event: pull_request",
        "    branch: main",
        "engine: microvm",
        "image: nixos",
        "dependencies:",
        "  - go",
        "  - github:nixos/nixpkgs#hello",
        '  - "python3.withPackages (p: [p.requests])"',
        "registry:",
        "  nixpkgs: github:nixos/nixpkgs/nixos-24.11",
        "caches:",
        '  https://cache.example.org: "cache.example.org-1:AAAA"',
        "virtualisation:",
        "  docker: true",
        "environment:",
        "  PATH: /work/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "steps:",
        "  - name: after install",
        "    command: |",
        '      echo "PATH=$PATH"',
        '      echo "DOCKER_HOST=$DOCKER_HOST"',
        '      printf "%s\\n" "$NIX_CONFIG" > /outputs/nix-config-later.txt',
        `      ${PRINT_TANGLED}`,
        "",
      ].join("\n"),
    );
    const allowed = writeConfig(dir, true);
    const common = (workflow: string, runId: string, extra: string[]) =>
      runCli(
        [
          "run",
          "--workflow",
          workflow,
          "--checkout",
          ws.checkout,
          "--out",
          join(dir, runId),
          "--run-id",
          runId,
          "--kubeconfig",
          cluster.kubeconfigPath,
          "--kubectl",
          KUBECTL,
          "--config",
          allowed,
          ...REPO_FLAGS,
          ...extra,
        ],
        { timeoutMs: 400_000 },
      );
    const [push, pr] = await Promise.all([
      common(alpine, "tg-alpine", ["--event", "push", "--branch", "main", "--sha", "abc123"]),
      common(nixos, "tg-nixos", [
        "--event",
        "pull_request",
        "--branch",
        "main",
        "--pr-source-branch",
        "feature/x",
        "--pr-source-sha",
        "def456",
        "--pr-action",
        "synchronize",
        "--keep",
      ]),
    ]);

    assert.equal(push.code, 0, push.stderr);
    assert.equal(readResult(join(dir, "tg-alpine")).job.image, BUSYBOX);
    assert.match(push.stdout, /^uid=0 pwd=\/work busybox=BusyBox$/m);
    const pushVars = push.stdout.split("\n").filter((line) => line.startsWith("TANGLED_"));
    assert.deepEqual(pushVars, [
      "TANGLED_COMMIT_SHA=abc123",
      "TANGLED_PIPELINE_ID=at://did:web:spindle.example.org/sh.tangled.pipeline/3kx",
      "TANGLED_PIPELINE_KIND=push",
      "TANGLED_REF=refs/heads/main",
      "TANGLED_REF_NAME=main",
      "TANGLED_REF_TYPE=branch",
      "TANGLED_REPO_DEFAULT_BRANCH=main",
      "TANGLED_REPO_DID=did:plc:abc",
      "TANGLED_REPO_KNOT=knot.example.org",
      "TANGLED_REPO_NAME=core",
      "TANGLED_REPO_URL=https://knot.example.org/did:plc:abc/core",
      "TANGLED_SHA=abc123",
    ]);

    assert.equal(pr.code, 0, pr.stderr);
    const prResult = readResult(join(dir, "tg-nixos"));
    assert.deepEqual(
      prResult.steps.map((step) => [step.name, step.status]),
      [
        ["install dependencies (nix)", "success"],
        ["after install", "success"],
      ],
    );
    assert.deepEqual(
      readFileSync(join(dir, "tg-nixos", "outputs", "nix-calls.txt"), "utf8")
        .trim()
        .split("\n"),
      [
        "[profile][install][--profile][/nix/var/nix/profiles/knotless-dependencies][--override-flake][nixpkgs][github:nixos/nixpkgs/nixos-24.11][nixpkgs#go][github:nixos/nixpkgs#hello]",
        '[profile][install][--profile][/nix/var/nix/profiles/knotless-dependencies][--override-flake][nixpkgs][github:nixos/nixpkgs/nixos-24.11][--impure][--expr][with (builtins.getFlake "nixpkgs").legacyPackages.${builtins.currentSystem}; (python3.withPackages (p: [p.requests]))]',
      ],
    );
    const config =
      "experimental-features = nix-command flakes\nextra-substituters = https://cache.example.org\nextra-trusted-public-keys = cache.example.org-1:AAAA";
    assert.equal(readFileSync(join(dir, "tg-nixos", "outputs", "nix-config-later.txt"), "utf8"), `${config}\n`);
    assert.match(
      pr.stdout,
      /^PATH=\/nix\/var\/nix\/profiles\/knotless-dependencies\/bin:\/work\/bin:\/usr\/local\/sbin:/m,
    );
    assert.match(pr.stdout, /^DOCKER_HOST=tcp:\/\/127\.0\.0\.1:2375$/m);
    const prVars = pr.stdout.split("\n").filter((line) => line.startsWith("TANGLED_"));
    assert.deepEqual(prVars, [
      "TANGLED_COMMIT_SHA=def456",
      "TANGLED_PIPELINE_ID=at://did:web:spindle.example.org/sh.tangled.pipeline/3kx",
      "TANGLED_PIPELINE_KIND=pull_request",
      "TANGLED_PR_ACTION=synchronize",
      "TANGLED_PR_SOURCE_BRANCH=feature/x",
      "TANGLED_PR_SOURCE_SHA=def456",
      "TANGLED_PR_TARGET_BRANCH=main",
      "TANGLED_REF=refs/heads/feature/x",
      "TANGLED_REF_NAME=feature/x",
      "TANGLED_REF_TYPE=branch",
      "TANGLED_REPO_DEFAULT_BRANCH=main",
      "TANGLED_REPO_DID=did:plc:abc",
      "TANGLED_REPO_KNOT=knot.example.org",
      "TANGLED_REPO_NAME=core",
      "TANGLED_REPO_URL=https://knot.example.org/did:plc:abc/core",
      "TANGLED_SHA=def456",
    ]);
    // The kept pod: the Docker daemon's container beside the run container, privileged, with /work.
    const pods = await getJson<{
      items: Array<{
        spec: {
          containers: Array<{
            name: string;
            image: string;
            securityContext?: object;
            volumeMounts?: Array<{ mountPath: string }>;
          }>;
        };
      }>;
    }>(cluster.kubeconfigPath, ["get", "pods", "-l", "knotless.dev/run-id=tg-nixos"]);
    const docker = pods.items[0]?.spec.containers.find((container) => container.name === "docker");
    assert.deepEqual(
      [docker?.image, docker?.securityContext, docker?.volumeMounts?.map((m) => m.mountPath)],
      [DEBIAN, { privileged: true }, ["/work"]],
    );
  });

  it("refuses virtualisation.docker where the configuration does not allow privileged containers: exit 2, the setting named, no Job", async () => {
    const ws = makeWorkspace("");
    const dir = join(ws.out, "..");
    const workflow = join(dir, "docker.yml");
    writeFileSync(
      workflow,
      "engine: microvm\nimage: nixos\nvirtualisation:\n  docker: true\nsteps:\n  - name: a\n    command: docker info\n",
    );
    const refused = writeConfig(dir, false);
    const run = await runCli([
      "run",
      "--workflow",
      workflow,
      "--checkout",
      ws.checkout,
      "--out",
      join(dir, "out"),
      "--run-id",
      "tg-refused",
      "--kubeconfig",
      cluster.kubeconfigPath,
      "--kubectl",
      KUBECTL,
      "--config",
      refused,
    ]);
    assert.equal(run.code, 2, run.stderr);
    assert.equal(
      run.stderr,
      `knotless-runner-k8s: ${workflow}:4:3: virtualisation.docker: needs a privileged container (the Docker daemon), which this runner does not allow; the operator allows it with allowPrivileged: true in --config ${refused}\n`,
    );
    const jobs = await getJson<{ items: Array<{ metadata: { name: string } }> }>(cluster.kubeconfigPath, [
      "get",
      "jobs",
    ]);
    assert.equal(
      jobs.items.some((job) => job.metadata.name.includes("tg-refused")),
      false,
    );
  });
});
