import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InputError } from "../../src/core/errors.js";
import { formatIssue, WorkflowError } from "../../src/workflow/workflow-errors.js";
import { parseErrors } from "./workflow-fixtures.js";

const STEP = "steps: [{name: a, command: b}]\n";

/** Each case: the file's text and every line the parser must report for it, exactly. */
const CASES: ReadonlyArray<{ title: string; text: string; errors: string[] }> = [
  {
    title: "an unknown top-level key, with the close one suggested",
    text: `enviroment:\n  A: 1\n${STEP}`,
    errors: ["wf.yml:1:1: enviroment: unknown key; did you mean `environment`?"],
  },
  {
    title: "unknown keys inside steps, when and clone, suggested by distance and by alias",
    text: "when:\n  - event: push\n    branches: main\nclone:\n  dept: 1\nsteps:\n  - name: a\n    run: make\n    env:\n      A: 1\n  - name: b\n    command: make\n",
    errors: [
      "wf.yml:3:5: when[0].branches: unknown key; did you mean `branch`?",
      "wf.yml:5:3: clone.dept: unknown key; did you mean `depth`?",
      "wf.yml:7:5: steps[0]: expected the key `command`, found none",
      "wf.yml:8:5: steps[0].run: unknown key; did you mean `command`?",
      "wf.yml:9:5: steps[0].env: unknown key; did you mean `environment`?",
    ],
  },
  {
    title: "an unknown key nothing is close to, with the keys that would do",
    text: "steps:\n  - name: a\n    command: b\n    colour: red\n",
    errors: ["wf.yml:4:5: steps[0].colour: unknown key; expected one of `name`, `command`, `environment`, `timeout`"],
  },
  {
    title: "wrong types: a map for a command, a string for steps, a list for an image",
    text: "image: [alpine]\nsteps:\n  - name: a\n    command:\n      run: make\n  - name: b\n    command: [make]\n",
    errors: [
      "wf.yml:1:8: image: expected a string, found a list",
      "wf.yml:5:7: steps[0].command: expected a string, found a map",
      "wf.yml:7:14: steps[1].command: expected a string, found a list",
    ],
  },
  {
    title: "steps that are not a list, and an empty list of steps",
    text: "steps: make all\n",
    errors: ["wf.yml:1:8: steps: expected a list of steps such as - {name: build, command: make}, found a string"],
  },
  {
    title: "an empty list of steps",
    text: "steps: []\n",
    errors: ["wf.yml:1:8: steps: expected at least one step, found an empty list"],
  },
  {
    title: "a file without steps",
    text: "engine: nixery\n",
    errors: ["wf.yml:1:1: expected the key `steps`, found none"],
  },
  {
    title: "an empty command and a missing name",
    text: "steps:\n  - command: '  '\n  - name: b\n    command:\n",
    errors: [
      "wf.yml:2:5: steps[0]: expected the key `name`, found none",
      "wf.yml:2:14: steps[0].command: expected a non-empty string, found an empty one",
      "wf.yml:4:5: steps[1].command: expected a string, found nothing",
    ],
  },
  {
    title: "bad environment names at the workflow and step level, and a value that is a list",
    text: "environment:\n  1ST: a\n  MY-VAR: b\nsteps:\n  - name: a\n    command: b\n    environment:\n      OK: [1]\n      'has space': x\n",
    errors: [
      'wf.yml:2:3: environment["1ST"]: expected a variable name of letters, digits and _ that does not start with a digit, found "1ST"',
      'wf.yml:3:3: environment.MY-VAR: expected a variable name of letters, digits and _ that does not start with a digit, found "MY-VAR"',
      "wf.yml:8:11: steps[0].environment.OK: expected a string, number or boolean, found a list",
      'wf.yml:9:7: steps[0].environment["has space"]: expected a variable name of letters, digits and _ that does not start with a digit, found "has space"',
    ],
  },
  {
    title: "bad durations: an unknown unit, more than a week, a bare number, a step's",
    text: "timeout: 2d\nsteps:\n  - name: a\n    command: b\n    timeout: 169h\n  - name: c\n    command: d\n    timeout: 90\n",
    errors: [
      'wf.yml:1:10: timeout: expected a duration such as 90s, 10m or 1h30m, found "2d"',
      'wf.yml:5:14: steps[0].timeout: expected a duration of at most 168h (a week), found "169h"',
      'wf.yml:8:14: steps[1].timeout: expected a duration such as 90s, 10m or 1h30m, found "90"',
    ],
  },
  {
    title: "an unknown engine, with the close one suggested",
    text: `engine: nixry\n${STEP}`,
    errors: [
      'wf.yml:1:9: engine: expected one of kubernetes (or k8s), nixery, microvm; found "nixry"; did you mean `nixery`?',
    ],
  },
  {
    title: "an engine nothing is close to, as a file for another system",
    text: `engine: docker\n${STEP}`,
    errors: [
      "wf.yml:1:9: engine: this workflow is for another engine (engine: docker), not one this runner runs (kubernetes, nixery, microvm); it is not run here",
    ],
  },
  {
    title: "a registry's package that is not an attribute name, and a list of dependencies on nixery",
    text: `dependencies:\n  nixpkgs:\n    - nodejs\n  git+https://tangled.sh/@oppi.li/statix:\n    - "statix x"\n${STEP}`,
    errors: [
      'wf.yml:5:7: dependencies["git+https://tangled.sh/@oppi.li/statix"][0]: expected a package name such as go or python3Packages.pip, found "statix x"',
    ],
  },
  {
    title: "nixpkgs that is not a list of package names",
    text: `dependencies:\n  nixpkgs: go\n${STEP}dependencies2: x\n`,
    errors: [
      "wf.yml:2:12: dependencies.nixpkgs: expected a list of packages, found a string",
      "wf.yml:4:1: dependencies2: unknown key; did you mean `dependencies`?",
    ],
  },
  {
    title: "a nixpkgs package name Nixery cannot take",
    text: `dependencies:\n  nixpkgs: [go, "my pkg", a/b]\n${STEP}`,
    errors: [
      'wf.yml:2:17: dependencies.nixpkgs[1]: expected a package name such as go or python3Packages.pip, found "my pkg"',
      'wf.yml:2:27: dependencies.nixpkgs[2]: expected a package name such as go or python3Packages.pip, found "a/b"',
    ],
  },
  {
    title: "a Nix expression in a nixery nixpkgs list, saying why spindle could not run it either (a real file's)",
    text: `engine: nixery\ndependencies:\n  nixpkgs:\n    - "haskell.compiler.ghc942.withPackages (pkgs: [ pkgs.cabal-install ])"\n${STEP}`,
    errors: [
      "wf.yml:4:7: dependencies.nixpkgs[0]: expected a package name such as go or python3Packages.pip, found \"haskell.compiler.ghc942.withPackages (pkgs: [ pkgs.cabal-install ])\"; a Nix expression is not a package name: spindle's nixery engine puts each name in the Nixery image's path, which no registry takes (its run fails at the image pull), so it is refused here before the run; name the package (haskell.compiler.ghc942, cabal-install) or use engine microvm with a NixOS image, whose dependencies may be expressions",
    ],
  },
  {
    title: "nixpkgs with engine kubernetes",
    text: `engine: kubernetes\ndependencies:\n  nixpkgs: [go]\n${STEP}`,
    errors: [
      "wf.yml:3:3: dependencies.nixpkgs: packages need engine nixery or microvm, but engine is kubernetes, which runs `image` as it is; remove `engine` or set it to nixery or microvm",
    ],
  },
  {
    title: "duplicate step names, naming both places",
    text: 'steps:\n  - name: build\n    command: make\n  - name: test\n    command: make test\n  - name: "build"\n    command: make again\n',
    errors: [
      'wf.yml:6:11: steps[2].name: duplicate step name "build", already used by steps[0] at wf.yml:2:11; logs and results tell steps apart by name',
    ],
  },
  {
    title: "a key set twice in one map, naming both places",
    text: "steps:\n  - name: a\n    command: b\n    command: c\n",
    errors: ["wf.yml:4:5: steps[0].command: duplicate key; `command` is already set at wf.yml:3:5"],
  },
  {
    title: "when that is a map rather than a list, and constraints with bad fields",
    text: `when:\n  event: push\n${STEP}`,
    errors: ["wf.yml:2:3: when: expected a list of constraints such as - {event: push, branch: main}, found a map"],
  },
  {
    title: "constraints: no event, an event that is a map, a branch list with a number kept as text and a bad glob",
    text: `when:\n  - branch: main\n  - event: {push: 1}\n    branch: [main, 2024, "feat/[x"]\n  - event: push\n    tag: "v{1"\n${STEP}`,
    errors: [
      "wf.yml:2:5: when[0]: expected the key `event`, found none",
      "wf.yml:3:12: when[1].event: expected a string or a list of strings, found a map",
      'wf.yml:4:26: when[1].branch[2]: the pattern "feat/[x" has a `[` without its `]` (within one `/`-separated part)',
      'wf.yml:6:10: when[2].tag: the pattern "v{1" has a `{` without its `}` (within one `/`-separated part)',
    ],
  },
  {
    title: "clone fields of the wrong kind",
    text: `clone:\n  skip: "true"\n  depth: -1\n  submodules: maybe\n${STEP}`,
    errors: [
      'wf.yml:2:9: clone.skip: expected true or false, found "true"',
      'wf.yml:3:10: clone.depth: expected a whole number, 0 or more, found "-1"',
      'wf.yml:4:15: clone.submodules: expected true or false, found "maybe"',
    ],
  },
  {
    title: "resources that are not Kubernetes quantities, and an unknown resource",
    text: `resources:\n  cpu: two\n  memory: 4GB\n  gpu: 1\n${STEP}`,
    errors: [
      'wf.yml:2:8: resources.cpu: expected a Kubernetes quantity such as 500m, 2 or 512Mi, found "two"',
      'wf.yml:3:11: resources.memory: expected a Kubernetes quantity such as 500m, 2 or 512Mi, found "4GB"',
      "wf.yml:4:3: resources.gpu: unknown key; did you mean `cpu`?",
    ],
  },
  {
    title: "shells that are not plain words or do not start with a command",
    text: `shell: bash -c "$X"\nsteps:\n  - name: a\n    command: b\n`,
    errors: [
      'wf.yml:1:8: shell: expected plain words without quotes or shell characters, such as bash -eo pipefail; found "\\"$X\\"" in "bash -c \\"$X\\""',
    ],
  },
  {
    title: "a shell whose first word is an option or a relative path",
    text: `shell: ./sh -e\n${STEP}`,
    errors: [
      'wf.yml:1:8: shell: expected a command name or an absolute path as the first word, such as bash or /bin/sh; found "./sh"',
    ],
  },
  {
    title: "a shell with a pipe",
    text: `shell: sh -e | tee log\n${STEP}`,
    errors: [
      'wf.yml:1:8: shell: expected plain words without quotes or shell characters, such as bash -eo pipefail; found "|" in "sh -e | tee log"',
    ],
  },
  {
    title: "an image that is no image reference",
    text: `image: "alpine 3.20"\n${STEP}`,
    errors: ['wf.yml:1:8: image: expected an image reference such as alpine:3.20, found "alpine 3.20"'],
  },
  {
    title: "a step name over two lines",
    text: 'steps:\n  - name: "a\\nb"\n    command: c\n',
    errors: ['wf.yml:2:11: steps[0].name: expected a step name on one line without control characters, found "a\\nb"'],
  },
  {
    title: "a step name with a lone surrogate (text given by the library that no UTF-8 file could hold)",
    text: 'steps:\n  - name: "a\\ud800b"\n    command: c\n',
    errors: [
      'wf.yml:2:11: steps[0].name: expected a step name in UTF-8, found a lone surrogate (U+D800) in "a\\ud800b"',
    ],
  },
  {
    title: "a merge key",
    text: "base: &base\n  name: a\nsteps:\n  - <<: *base\n    command: b\n",
    errors: [
      "wf.yml:1:1: base: unknown key; expected one of `when`, `engine`, `image`, `shell`, `timeout`, `resources`, `architecture`, `dependencies`, `registry`, `virtualisation`, `services`, `clone`, `environment`, `steps`, `caches`, `artifacts`",
      'wf.yml:4:5: steps[0]["<<"]: merge keys (`<<`) are not supported; write the keys out',
      "wf.yml:4:5: steps[0]: expected the key `name`, found none",
    ],
  },
  {
    title: "a YAML syntax error, with its position, and nothing else",
    text: "steps:\n  - name: a\n   command: b\nbogus: 1\n",
    errors: ["wf.yml:3:1: invalid YAML: Sequence item without - indicator"],
  },
  {
    title: "several YAML syntax errors",
    text: "steps: [a, b\nwhen: {x: 1\n",
    errors: [
      "wf.yml:2:1: invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]",
      "wf.yml:3:1: invalid YAML: Flow map in block collection must be sufficiently indented and end with a }",
    ],
  },
  {
    title: "two YAML documents",
    text: `${STEP}---\n${STEP}`,
    errors: ["wf.yml:2:1: invalid YAML: expected one YAML document, found a second one (`---`)"],
  },
  {
    title: "an empty file",
    text: "",
    errors: ["wf.yml:1:1: expected a map of workflow keys such as when, engine and steps, found an empty file"],
  },
  {
    title: "a file of comments only",
    text: "# nothing yet\n",
    errors: ["wf.yml:1:1: expected a map of workflow keys such as when, engine and steps, found an empty file"],
  },
  {
    title: "a list at the top level",
    text: "- name: a\n  command: b\n",
    errors: ["wf.yml:1:1: expected a map of workflow keys such as when, engine and steps, found a list"],
  },
  {
    title: "a string at the top level",
    text: "make all\n",
    errors: ["wf.yml:1:1: expected a map of workflow keys such as when, engine and steps, found a string"],
  },
];

describe("parseWorkflow's error messages", () => {
  for (const { title, text, errors } of CASES) {
    it(`reports ${title}`, () => {
      assert.deepEqual(parseErrors(text), errors);
    });
  }

  it("reports every error of a file with many, in the order of the file", () => {
    const errors = parseErrors(`enviroment: {}\nengine: nixry\ntimeout: soon\nsteps:\n  - name: a\n    comand: b\n`);
    assert.deepEqual(
      errors.map((line) => line.split(": ")[0]),
      ["wf.yml:1:1", "wf.yml:2:9", "wf.yml:3:10", "wf.yml:5:5", "wf.yml:6:5"],
    );
  });
});

describe("WorkflowError", () => {
  it("is an InputError (exit 2) whose message is every issue, one per line", () => {
    const issues = [
      { file: "a.yml", line: 1, column: 2, path: "steps", message: "expected a list" },
      { file: "a.yml", line: 3, column: 1, path: "", message: "invalid YAML: x" },
    ];
    const error = new WorkflowError(issues);
    assert.ok(error instanceof InputError);
    assert.equal(error.message, "a.yml:1:2: steps: expected a list\na.yml:3:1: invalid YAML: x");
    assert.deepEqual(error.issues, issues);
    assert.equal(formatIssue(issues[1]!), "a.yml:3:1: invalid YAML: x");
  });
});
