import assert from "node:assert/strict";
import { describe, it } from "node:test";
import * as yaml from "yaml";
import { parseWorkflow, parseWorkflowWith } from "../../src/workflow/parse-workflow.js";
import { formatWarning } from "../../src/workflow/workflow-errors.js";
import { parseErrors, parseOk, readFixture } from "./workflow-fixtures.js";

describe("parseWorkflow on Tangled's own workflow files", () => {
  it('reads build.yml: no engine but nixpkgs makes it nixery, CGO_ENABLED: 1 becomes "1", 7-space blocks keep their text', () => {
    const workflow = parseOk(readFixture("tangled/build.yml"), "build.yml");
    assert.deepEqual(workflow, {
      file: "build.yml",
      when: [{ event: ["push"], branch: ["master"], position: { line: 2, column: 5 } }],
      engine: "nixery",
      engineFrom: "dependencies",
      enginePosition: { line: 6, column: 3 },
      resources: {},
      nixpkgs: ["go", "gcc"],
      clone: { skip: false, submodules: true, tags: true },
      environment: [{ name: "CGO_ENABLED", value: "1" }],
      steps: [
        {
          name: "patch static dir",
          command: "mkdir -p appview/pages/static; touch appview/pages/static/x\n",
          environment: [],
          position: { line: 14, column: 5 },
        },
        {
          name: "build appview",
          command: "go build -o appview.out ./cmd/appview\n",
          environment: [],
          position: { line: 18, column: 5 },
        },
        {
          name: "build knot",
          command: "go build -o knot.out ./cmd/knot\n",
          environment: [],
          position: { line: 22, column: 5 },
        },
      ],
    });
  });

  it("reads test.yml: engine nixery, an event list with a single-string branch, step-level environment", () => {
    const workflow = parseOk(readFixture("tangled/test.yml"), "test.yml");
    assert.equal(workflow.engine, "nixery");
    assert.equal(workflow.engineFrom, "engine");
    assert.deepEqual(workflow.enginePosition, { line: 5, column: 1 });
    assert.deepEqual(workflow.when, [
      { event: ["push", "pull_request"], branch: ["master"], position: { line: 2, column: 5 } },
    ]);
    assert.deepEqual(
      workflow.steps.map((step) => [step.name, step.command, step.environment]),
      [
        ["patch static dir", "mkdir -p appview/pages/static; touch appview/pages/static/x\n", []],
        ["run linter", "go vet -v ./...\n", [{ name: "CGO_ENABLED", value: "1" }]],
        ["run all tests", "go test -v ./...\n", [{ name: "CGO_ENABLED", value: "1" }]],
      ],
    );
  });

  it("reads fmt.yaml: quoted step names, single-string event and branch, a trailing blank line", () => {
    const workflow = parseOk(readFixture("tangled/fmt.yaml"), "fmt.yaml");
    assert.deepEqual(workflow.when, [{ event: ["push"], branch: ["master"], position: { line: 2, column: 5 } }]);
    assert.deepEqual(workflow.nixpkgs, ["go", "alejandra"]);
    assert.deepEqual(
      workflow.steps.map((step) => step.name),
      ["nix fmt", "go fmt"],
    );
    assert.equal(workflow.steps[0]!.command, "alejandra -c nix/**/*.nix flake.nix\n");
  });

  it("reads release.yml: tag globs, several constraints, clone settings, scalars kept as written, a folded command", () => {
    const workflow = parseOk(readFixture("tangled/release.yml"), "release.yml");
    assert.deepEqual(
      workflow.when?.map(({ position: _position, ...constraint }) => constraint),
      [
        { event: ["push"], tag: ["v*", "release-*"] },
        { event: ["push"], branch: ["main", "release/**"] },
        { event: ["pull_request"], branch: ["main"] },
        { event: ["manual"] },
      ],
    );
    assert.deepEqual(workflow.clone, { skip: false, depth: 50, submodules: true, tags: true });
    assert.deepEqual(workflow.environment, [
      { name: "BUILD_NUMBER", value: "123" },
      { name: "NODE_VERSION", value: "20.10" },
      { name: "STRICT", value: "true" },
      { name: "MODE", value: "0x10" },
    ]);
    assert.deepEqual(workflow.steps[1]!.environment, [
      { name: "NODE_ENV", value: "test" },
      { name: "JEST_WORKERS", value: "2" },
    ]);
    assert.equal(workflow.steps[2]!.command, "npm run build -- --production\n");
  });
});

describe("parseWorkflow", () => {
  it("loads the yaml package itself and gives what parseWorkflowWith gives", async () => {
    const text = readFixture("tangled/release.yml");
    assert.deepEqual(await parseWorkflow(text, "release.yml"), parseWorkflowWith(yaml, text, "release.yml"));
  });
});

describe("parseWorkflow on our own keys", () => {
  it("refuses absurd resource requests at their position, saying the bounds", () => {
    assert.deepEqual(parseErrors('resources: {cpu: "100000", memory: 999Ei}\nsteps: [{name: a, command: b}]\n'), [
      "wf.yml:1:18: resources.cpu: cpu 100000 is outside the bounds any run may ask for (from 1m to 1024 cores)",
      "wf.yml:1:36: resources.memory: memory 999Ei is outside the bounds any run may ask for (from 4Mi to 64Ti)",
    ]);
  });

  it("reads the maximal fixture: image, shell words, timeouts in ms, resources as written", () => {
    const workflow = parseOk(readFixture("maximal.yml"), "maximal.yml");
    assert.equal(workflow.engine, "kubernetes");
    assert.equal(workflow.image, "golang:1.23-alpine");
    assert.deepEqual(workflow.shell, ["sh", "-eu"]);
    assert.equal(workflow.timeoutMs, 45 * 60_000);
    assert.deepEqual(workflow.resources, { cpu: "2", memory: "4Gi" });
    assert.deepEqual(workflow.clone, { skip: false, depth: 1, submodules: false, tags: true });
    assert.deepEqual(workflow.environment, [
      { name: "GOFLAGS", value: "-mod=readonly" },
      { name: "CGO_ENABLED", value: "0" },
      { name: "RATIO", value: "1.0" },
    ]);
    assert.equal(workflow.steps[0]!.timeoutMs, undefined);
    assert.equal(workflow.steps[1]!.timeoutMs, 20 * 60_000);
    assert.equal(workflow.steps[1]!.command, "go vet ./...\ngo test ./...\n");
  });

  it("makes a file with neither engine nor nixpkgs a kubernetes workflow without an image of its own", () => {
    const workflow = parseOk(readFixture("plain-image.yml"));
    assert.equal(workflow.engine, "kubernetes");
    assert.equal(workflow.engineFrom, "default");
    assert.equal(workflow.image, undefined);
    assert.deepEqual(workflow.steps[0]!.command, 'echo hello from "$(uname -s)"');
  });

  it("takes k8s for kubernetes and an empty nixpkgs list for nixery with Tangled's default packages only", () => {
    assert.equal(parseOk("engine: k8s\nsteps: [{name: a, command: b}]\n").engine, "kubernetes");
    const workflow = parseOk("dependencies:\n  nixpkgs: []\nsteps: [{name: a, command: b}]\n");
    assert.equal(workflow.engine, "nixery");
    assert.deepEqual(workflow.nixpkgs, []);
  });
});

describe("parseWorkflow's reading of YAML values", () => {
  it("keeps every non-string scalar as its source text and a quoted one as its value", () => {
    const workflow = parseOk(
      'environment:\n  A: 1.0\n  B: true\n  C: 0x10\n  D: "1.0"\n  E: 1e3\n  F: 010\n  G: .inf\n  H: !!int 7\n  I: -0\nsteps: [{name: a, command: b}]\n',
    );
    assert.deepEqual(
      workflow.environment.map((variable) => variable.value),
      ["1.0", "true", "0x10", "1.0", "1e3", "010", ".inf", "7", "-0"],
    );
  });

  it("makes an empty, ~ or null variable an empty string, as Tangled's decoder does", () => {
    const workflow = parseOk("environment:\n  A:\n  B: ~\n  C: null\nsteps: [{name: a, command: b}]\n");
    assert.deepEqual(workflow.environment, [
      { name: "A", value: "" },
      { name: "B", value: "" },
      { name: "C", value: "" },
    ]);
  });

  it("reads step names and commands written as numbers or booleans as their text", () => {
    const workflow = parseOk("steps:\n  - name: 2024\n    command: true\n");
    assert.deepEqual([workflow.steps[0]!.name, workflow.steps[0]!.command], ["2024", "true"]);
  });

  it("reads a file with a byte-order mark and Windows line endings, commands with plain newlines", () => {
    const workflow = parseOk("\uFEFFsteps:\r\n  - name: a\r\n    command: |\r\n      one\r\n      two\r\n");
    assert.equal(workflow.steps[0]!.command, "one\ntwo\n");
    assert.deepEqual(workflow.steps[0]!.position, { line: 2, column: 5 });
  });

  it("follows anchors and aliases", () => {
    const workflow = parseOk(
      "environment: &common\n  A: 1\nsteps:\n  - name: a\n    command: b\n    environment: *common\n",
    );
    assert.deepEqual(workflow.steps[0]!.environment, [{ name: "A", value: "1" }]);
  });

  it("takes YAML 1.1 yes/no/on/off for clone's booleans, as Tangled's decoder does", () => {
    assert.deepEqual(parseOk("clone:\n  skip: yes\n  submodules: off\nsteps: [{name: a, command: b}]\n").clone, {
      skip: true,
      submodules: false,
      tags: true,
    });
  });

  it("treats an empty when, environment or clone like an absent one", () => {
    const workflow = parseOk(
      "when:\nenvironment:\nclone:\ndependencies:\nresources:\nsteps: [{name: a, command: b}]\n",
    );
    assert.equal(workflow.when, undefined);
    assert.deepEqual(workflow.environment, []);
    assert.deepEqual(workflow.clone, { skip: false, submodules: true, tags: true });
    assert.equal(workflow.engine, "kubernetes");
    assert.equal(parseOk("when: []\nsteps: [{name: a, command: b}]\n").when, undefined);
  });

  it("keeps a command's odd indentation relative to its block and its inner blank lines", () => {
    const workflow = parseOk(
      "steps:\n  - name: a\n    command: |\n           if true; then\n             echo in\n\n           fi\n",
    );
    assert.equal(workflow.steps[0]!.command, "if true; then\n  echo in\n\nfi\n");
  });
});

describe("parseWorkflow's warnings", () => {
  function warningsOf(text: string): string[] {
    return parseWorkflowWith(yaml, text, "wf.yml").warnings.map(formatWarning);
  }

  it("warns that a constraint with only an event matches no push or pull request, but not for manual", () => {
    assert.deepEqual(warningsOf("when:\n  - event: push\n  - event: manual\nsteps: [{name: a, command: b}]\n"), [
      "wf.yml:2:5: warning: when[0]: lists no `branch` or `tag`, so it matches no push or pull request (a push must match by branch or tag, a pull request by its target branch)",
    ]);
  });

  it("warns about an event Tangled never sends, with the closest one", () => {
    assert.deepEqual(
      warningsOf("when:\n  - event: [push, pul_request]\n    branch: main\nsteps: [{name: a, command: b}]\n"),
      [
        'wf.yml:2:5: warning: when[0].event: "pul_request" is not an event Tangled sends (push, pull_request, manual); did you mean `pull_request`?',
      ],
    );
  });

  it("warns, as Tangled does, when clone.skip makes depth and submodules moot", () => {
    assert.deepEqual(
      warningsOf("clone:\n  skip: true\n  depth: 5\n  submodules: true\nsteps: [{name: a, command: b}]\n"),
      [
        "wf.yml:2:3: warning: clone: `skip` and `submodules` cannot both apply; the checkout is skipped",
        "wf.yml:2:3: warning: clone: `skip` and `depth` cannot both apply; the checkout is skipped",
      ],
    );
  });

  it("warns that nixpkgs goes unused when the file sets its own image", () => {
    assert.deepEqual(
      warningsOf("image: alpine:3.20\ndependencies:\n  nixpkgs: [go]\nsteps: [{name: a, command: b}]\n"),
      [
        "wf.yml:3:3: warning: dependencies.nixpkgs: not used: `image` is set, so no Nixery image is composed from these packages",
      ],
    );
  });

  it("has no warnings for Tangled's own files", () => {
    for (const name of [
      "tangled/build.yml",
      "tangled/test.yml",
      "tangled/fmt.yaml",
      "tangled/release.yml",
      "maximal.yml",
    ])
      assert.deepEqual(warningsOf(readFixture(name)), [], name);
  });
});
