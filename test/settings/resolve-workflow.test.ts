import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  composeNixeryImage,
  DEFAULT_SHELL,
  NIXERY_RUNNER_PACKAGES,
  normalizeNixeryBase,
  resolveWorkflow,
  type ResolvedWorkflow,
} from "../../src/settings/resolve-workflow.js";
import { formatIssue } from "../../src/workflow/workflow-errors.js";
import { parseOk, readFixture } from "../workflow/workflow-fixtures.js";

function resolveOk(text: string, nixeryBase?: string, file = "wf.yml"): ResolvedWorkflow {
  const result = resolveWorkflow(parseOk(text, file), nixeryBase === undefined ? {} : { nixeryBase });
  assert.ok(result.ok, result.ok ? "" : result.errors.map(formatIssue).join("\n"));
  return result.workflow;
}

function resolveErrors(text: string, nixeryBase?: string): string[] {
  const result = resolveWorkflow(parseOk(text), nixeryBase === undefined ? {} : { nixeryBase });
  assert.ok(!result.ok, "expected errors");
  return result.errors.map(formatIssue);
}

describe("resolveWorkflow", () => {
  it("composes Tangled's nixery image: the base, the packages in order, then bash, git, coreutils, nix, then the helper's tar, find, grep and setsid", () => {
    const workflow = resolveOk(readFixture("tangled/build.yml"), "nixery.tangled.sh", "build.yml");
    assert.equal(workflow.image, "nixery.tangled.sh/go/gcc/bash/git/coreutils/nix/gnutar/findutils/gnugrep/util-linux");
    assert.equal(workflow.imageFrom, "nixery");
    assert.equal(workflow.engine, "nixery");
  });

  it("gives the whole resolved workflow of a Tangled file: default shell, env lists, clone, step sources", () => {
    assert.deepEqual(resolveOk(readFixture("tangled/test.yml"), "https://nixery.dev/", "test.yml"), {
      file: "test.yml",
      engine: "nixery",
      image: "nixery.dev/go/gcc/bash/git/coreutils/nix/gnutar/findutils/gnugrep/util-linux",
      imageFrom: "nixery",
      shell: ["sh", "-e"],
      resources: {},
      clamped: [],
      env: [],
      clone: { skip: false, submodules: true, tags: true },
      placement: {},
      when: [{ event: ["push", "pull_request"], branch: ["master"], position: { line: 2, column: 5 } }],
      steps: [
        {
          name: "patch static dir",
          command: "mkdir -p appview/pages/static; touch appview/pages/static/x\n",
          env: [],
          source: "test.yml:13",
        },
        {
          name: "run linter",
          command: "go vet -v ./...\n",
          env: [{ name: "CGO_ENABLED", value: "1" }],
          source: "test.yml:17",
        },
        {
          name: "run all tests",
          command: "go test -v ./...\n",
          env: [{ name: "CGO_ENABLED", value: "1" }],
          source: "test.yml:23",
        },
      ],
    });
  });

  it("keeps duplicates in the composed image, as Tangled does", () => {
    assert.equal(
      resolveOk("dependencies:\n  nixpkgs: [git, go, go]\nsteps: [{name: a, command: b}]\n", "nixery.dev").image,
      "nixery.dev/git/go/go/bash/git/coreutils/nix/gnutar/findutils/gnugrep/util-linux",
    );
  });

  it("composes only Tangled's defaults for engine nixery without packages", () => {
    assert.equal(
      resolveOk("engine: nixery\nsteps: [{name: a, command: b}]\n", "registry.example:5000/nixery").image,
      "registry.example:5000/nixery/bash/git/coreutils/nix/gnutar/findutils/gnugrep/util-linux",
    );
  });

  it("gives every field of the maximal fixture, in ms where it is a budget", () => {
    const workflow = resolveOk(readFixture("maximal.yml"), undefined, "maximal.yml");
    assert.deepEqual(
      { ...workflow, when: undefined, steps: undefined, caches: undefined, artifacts: undefined },
      {
        file: "maximal.yml",
        engine: "kubernetes",
        image: "golang:1.23-alpine",
        imageFrom: "workflow",
        shell: ["sh", "-eu"],
        timeoutMs: 2_700_000,
        resources: { cpu: "2", memory: "4Gi" },
        clamped: [],
        env: [
          { name: "GOFLAGS", value: "-mod=readonly" },
          { name: "CGO_ENABLED", value: "0" },
          { name: "RATIO", value: "1.0" },
        ],
        clone: { skip: false, depth: 1, submodules: false, tags: true },
        placement: {},
        when: undefined,
        steps: undefined,
        caches: undefined,
        artifacts: undefined,
      },
    );
    assert.deepEqual(
      workflow.caches?.map((cache) => [
        cache.key.template.source,
        cache.restoreKeys.map((key) => key.template.source),
        cache.paths,
      ]),
      [
        [
          'go-{{ KNOTLESS_WORKFLOW }}-{{ hashFiles "go.sum" "**/go.mod" }}',
          ["go-{{ KNOTLESS_WORKFLOW }}-", "go-"],
          ["/root/go/pkg/mod", "/root/.cache/go-build"],
        ],
      ],
    );
    assert.deepEqual(
      workflow.artifacts?.map(({ position: _position, ...artifact }) => artifact),
      [
        { name: "test-report", paths: ["/outputs/report/**"], when: "always", required: false },
        { name: "binaries", paths: ["/work/bin/*"], when: "success", required: true },
      ],
    );
    assert.deepEqual(workflow.steps, [
      { name: "build", command: "go build ./...", env: [], source: "maximal.yml:39" },
      {
        name: "test",
        command: "go vet ./...\ngo test ./...\n",
        env: [{ name: "GOFLAGS", value: "-count=1" }],
        timeoutMs: 1_200_000,
        source: "maximal.yml:41",
      },
    ]);
  });

  it("leaves the image to the runner's default for a kubernetes workflow without one", () => {
    const workflow = resolveOk(readFixture("plain-image.yml"));
    assert.equal(workflow.image, undefined);
    assert.equal(workflow.imageFrom, "default");
    assert.deepEqual(workflow.shell, DEFAULT_SHELL);
  });

  it("uses an explicit image over the nixery composition, and needs no Nixery registry then", () => {
    const workflow = resolveOk("engine: nixery\nimage: alpine:3.20\nsteps: [{name: a, command: b}]\n");
    assert.equal(workflow.image, "alpine:3.20");
    assert.equal(workflow.imageFrom, "workflow");
  });

  it("refuses a nixery workflow without a Nixery registry, saying to pass --nixery or set image", () => {
    assert.deepEqual(resolveErrors("engine: nixery\nsteps: [{name: a, command: b}]\n"), [
      "wf.yml:1:1: engine: a nixery workflow's image is composed on the runner's Nixery registry: pass --nixery URL (e.g. --nixery nixery.dev), or set `image` in the workflow",
    ]);
    assert.deepEqual(resolveErrors("dependencies:\n  nixpkgs: [go]\nsteps: [{name: a, command: b}]\n"), [
      "wf.yml:2:3: dependencies.nixpkgs: lists nixpkgs packages, so this is a nixery workflow, whose image is composed on the runner's Nixery registry: pass --nixery URL (e.g. --nixery nixery.dev), or set `image` in the workflow",
    ]);
  });

  it("refuses a Nixery registry that is not a host, and a composed name longer than runtimes pull", () => {
    assert.deepEqual(resolveErrors("engine: nixery\nsteps: [{name: a, command: b}]\n", "nixery dev"), [
      'wf.yml:1:1: engine: the Nixery registry "nixery dev" is not a registry host such as nixery.dev or registry.example:5000/nixery',
    ]);
    const packages = Array.from({ length: 30 }, (_, index) => `package${index}`).join(", ");
    const [error] = resolveErrors(
      `dependencies:\n  nixpkgs: [${packages}]\nsteps: [{name: a, command: b}]\n`,
      "nixery.dev",
    );
    assert.match(
      error!,
      /^wf\.yml:2:3: dependencies\.nixpkgs: the composed Nixery image name is 359 characters long, more than the 255 an image name may have/,
    );
  });
});

describe("normalizeNixeryBase and composeNixeryImage", () => {
  it("drops the scheme and trailing slashes and refuses what is not a registry host", () => {
    assert.equal(normalizeNixeryBase("https://nixery.dev/"), "nixery.dev");
    assert.equal(normalizeNixeryBase("http://localhost:8080/nix"), "localhost:8080/nix");
    assert.equal(normalizeNixeryBase("nixery.tangled.sh"), "nixery.tangled.sh");
    assert.equal(normalizeNixeryBase("ftp://x"), undefined);
    assert.equal(normalizeNixeryBase(""), undefined);
  });

  it("joins the base, the packages, Tangled's defaults and the helper's packages with /", () => {
    assert.equal(
      composeNixeryImage("nixery.dev", ["python3"]),
      "nixery.dev/python3/bash/git/coreutils/nix/gnutar/findutils/gnugrep/util-linux",
    );
  });

  it("adds a helper package only when the path does not name it yet, and keeps the workflow's own order and duplicates", () => {
    assert.equal(
      composeNixeryImage("nixery.dev", ["findutils", "go", "go", "util-linux"]),
      "nixery.dev/findutils/go/go/util-linux/bash/git/coreutils/nix/gnutar/gnugrep",
    );
    assert.deepEqual(NIXERY_RUNNER_PACKAGES, ["gnutar", "findutils", "gnugrep", "util-linux"]);
  });
});
