import assert from "node:assert/strict";
import { describe, it } from "node:test";
import * as yaml from "yaml";
import { parseWorkflowWith } from "../../src/workflow/parse-workflow.js";
import { formatWarning } from "../../src/workflow/workflow-errors.js";
import { parseErrors, parseOk } from "./workflow-fixtures.js";

const STEPS = "steps:\n  - name: build\n    command: make\n";

describe("parseWorkflow on caches:", () => {
  it("reads key and restore-key templates with their places, and paths made absolute under /work and normalized", () => {
    const workflow = parseOk(
      [
        "environment:",
        "  NODE: 20",
        "caches:",
        `  - key: 'npm-{{ NODE }}-{{ hashFiles "package-lock.json" }}'`,
        "    restore-keys:",
        "      - npm-{{ NODE }}-",
        "      - npm-",
        "    paths: [node_modules, ./web//node_modules/, /root/.npm/]",
        "  - key: go-mod",
        "    restore-keys: go-",
        "    paths: /root/go/pkg/mod",
        STEPS,
      ].join("\n"),
    );
    const [npm, go] = workflow.caches!;
    assert.deepEqual(npm!.key.template.parts, [
      { kind: "text", text: "npm-" },
      { kind: "variable", name: "NODE" },
      { kind: "text", text: "-" },
      { kind: "hashFiles", patterns: ["package-lock.json"] },
    ]);
    assert.deepEqual([npm!.key.position, npm!.key.path], [{ line: 4, column: 10 }, "caches[0].key"]);
    assert.deepEqual(
      npm!.restoreKeys.map((key) => [key.template.source, key.path, key.position.line]),
      [
        ["npm-{{ NODE }}-", "caches[0].restore-keys[0]", 6],
        ["npm-", "caches[0].restore-keys[1]", 7],
      ],
    );
    assert.deepEqual(npm!.paths, ["/work/node_modules", "/work/web/node_modules", "/root/.npm"]);
    assert.deepEqual(npm!.position, { line: 4, column: 5 });
    assert.deepEqual(
      go!.restoreKeys.map((key) => [key.template.source, key.path]),
      [["go-", "caches[1].restore-keys"]],
    );
    assert.deepEqual(go!.paths, ["/root/go/pkg/mod"]);
  });

  it("leaves caches and artifacts out of a workflow that has none, or empty ones", () => {
    for (const text of [STEPS, `caches:\nartifacts: []\n${STEPS}`]) {
      const workflow = parseOk(text);
      assert.equal("caches" in workflow, false);
      assert.equal("artifacts" in workflow, false);
    }
  });

  it("reports every problem of every cache at its own place", () => {
    const errors = parseErrors(
      [
        "caches:",
        `  - key: 'deps-{{ hashfiles "x" }}'`, // 2
        "    paths: [../x, /knotless/y, /knotless-secrets, /steps/a, /proc/1, /sys, /dev/shm, '~/.npm', '*.o', /]", // 3
        "  - key: ''", // 4
        "    restore_keys: a-", // 5
        "    paths: [a, a/b/]", // 6
        "  - key: {{ x }}", // 7
        "    paths: []", // 8
        "  - path: x", // 9
        "  - not a map", // 10
        STEPS,
      ].join("\n"),
    );
    const expected = [
      'wf.yml:2:10: caches[0].key: in "deps-{{ hashfiles \\"x\\" }}" at character 9: unknown function `hashfiles`; did you mean `hashFiles`?',
      'wf.yml:3:13: caches[0].paths[0]: expected a path in the pod, absolute or relative to /work, such as node_modules; "../x" has a `..` segment; write the path it means, absolute or relative to /work',
      'wf.yml:3:19: caches[0].paths[1]: expected a path in the pod, absolute or relative to /work, such as node_modules; "/knotless/y" is under /knotless, the runner\'s own directory; a cache may not hold it',
      'wf.yml:3:32: caches[0].paths[2]: expected a path in the pod, absolute or relative to /work, such as node_modules; "/knotless-secrets" is under /knotless-secrets, the runner\'s secrets volume; a cache may not hold it',
      'wf.yml:3:51: caches[0].paths[3]: expected a path in the pod, absolute or relative to /work, such as node_modules; "/steps/a" is under /steps, the shared steps the runner uploads; a cache may not hold it',
      'wf.yml:3:61: caches[0].paths[4]: expected a path in the pod, absolute or relative to /work, such as node_modules; "/proc/1" is under /proc, the kernel\'s process file system; a cache may not hold it',
      'wf.yml:3:70: caches[0].paths[5]: expected a path in the pod, absolute or relative to /work, such as node_modules; "/sys" is under /sys, the kernel\'s device file system; a cache may not hold it',
      'wf.yml:3:76: caches[0].paths[6]: expected a path in the pod, absolute or relative to /work, such as node_modules; "/dev/shm" is under /dev, the pod\'s devices; a cache may not hold it',
      'wf.yml:3:86: caches[0].paths[7]: expected a path in the pod, absolute or relative to /work, such as node_modules; "~/.npm" starts with `~`, which is not expanded; write the absolute path, such as /root/.npm',
      'wf.yml:3:96: caches[0].paths[8]: expected a path in the pod, absolute or relative to /work, such as node_modules; "*.o" has a glob character (* ? [ ] { }); a cache path names a file or directory',
      'wf.yml:3:103: caches[0].paths[9]: expected a path in the pod, absolute or relative to /work, such as node_modules; "/" is the whole file system of the pod; name the directories to keep, such as node_modules or /root/.npm',
      "wf.yml:4:10: caches[1].key: expected a non-empty string, found an empty one",
      "wf.yml:5:5: caches[1].restore_keys: unknown key; did you mean `restore-keys`?",
      'wf.yml:6:16: caches[1].paths[1]: "a/b/" (/work/a/b) is inside caches[1].paths[0] (/work/a); list each directory once',
      `wf.yml:7:10: caches[2].key: expected a key template such as deps-{{ hashFiles "package-lock.json" }}, found a map; in YAML a value that starts with \`{\` must be quoted: key: '{{ hashFiles "package-lock.json" }}'`,
      "wf.yml:8:12: caches[2].paths: expected at least one path, such as node_modules or /root/.npm, found an empty list",
      "wf.yml:9:5: caches[3].path: unknown key; did you mean `paths`?",
      "wf.yml:9:5: caches[3]: expected the key `key`, found none",
      "wf.yml:9:5: caches[3]: expected the key `paths`, found none",
      `wf.yml:10:5: caches[4]: expected a cache such as {key: 'deps-{{ hashFiles "package-lock.json" }}', paths: [node_modules]}, found a string`,
    ];
    assert.deepEqual(errors, expected);
  });

  it("accepts run variables and the workflow's own environment in keys, and names an unknown variable with a suggestion", () => {
    parseOk(
      `environment:\n  NODE: 20\ncaches:\n  - key: '{{ CI }}-{{ KNOTLESS_REF_NAME }}-{{ NODE }}'\n    paths: x\n${STEPS}`,
    );
    assert.deepEqual(
      parseErrors(
        `environment:\n  NODE: 20\ncaches:\n  - key: 'a-{{ NODEE }}'\n    restore-keys: ['{{ KNOTLESS_SHAA }}', '{{ WHO }}']\n    paths: x\n${STEPS}`,
      ),
      [
        "wf.yml:4:10: caches[0].key: {{ NODEE }} is not a run variable (CI, KNOTLESS_*) nor one of the workflow's `environment`; did you mean `NODE`?",
        "wf.yml:5:20: caches[0].restore-keys[0]: {{ KNOTLESS_SHAA }} is not a run variable (CI, KNOTLESS_*) nor one of the workflow's `environment`; did you mean `KNOTLESS_SHA`?",
        "wf.yml:5:43: caches[0].restore-keys[1]: {{ WHO }} is not a run variable (CI, KNOTLESS_*) nor one of the workflow's `environment`",
      ],
    );
  });

  it("refuses hashFiles when clone.skip leaves no checkout to hash, in the key and in a restore key", () => {
    const errors = parseErrors(
      `clone:\n  skip: true\ncaches:\n  - key: 'a-{{ hashFiles "x" }}'\n    restore-keys: 'a-{{ hashFiles "y" }}-'\n    paths: x\n${STEPS}`,
    );
    assert.deepEqual(errors, [
      "wf.yml:4:10: caches[0].key: hashFiles hashes files of the checkout, but clone.skip is true, so there is none; key the cache on something else, or do not skip the checkout",
      "wf.yml:5:19: caches[0].restore-keys: hashFiles hashes files of the checkout, but clone.skip is true, so there is none; key the cache on something else, or do not skip the checkout",
    ]);
    parseOk(`clone:\n  skip: true\ncaches:\n  - key: 'a-{{ KNOTLESS_WORKFLOW }}'\n    paths: x\n${STEPS}`);
  });

  it("refuses two caches with the same key template, and warns of a path two caches keep", () => {
    assert.deepEqual(parseErrors(`caches:\n  - key: k\n    paths: a\n  - key: k\n    paths: b\n${STEPS}`), [
      "wf.yml:4:10: caches[1].key: the same key as caches[0].key at wf.yml:2:10; keys are immutable once saved, so only one of them could ever be saved",
    ]);
    const result = parseWorkflowWith(
      yaml,
      `caches:\n  - key: a\n    paths: /root/.cache\n  - key: b\n    paths: [/root/.cache/pip]\n${STEPS}`,
      "wf.yml",
    );
    assert.ok(result.ok);
    assert.deepEqual(result.warnings.map(formatWarning), [
      "wf.yml:5:13: warning: caches[1].paths[0]: /root/.cache/pip overlaps caches[0].paths (/root/.cache): both caches restore and save these files",
    ]);
  });

  it("refuses more than 16 caches, and a caches map that is not Tangled's binary caches", () => {
    const many = Array.from({ length: 17 }, (_, index) => `  - {key: k${index}, paths: p${index}}`).join("\n");
    assert.deepEqual(parseErrors(`caches:\n${many}\n${STEPS}`), [
      "wf.yml:2:3: caches: expected at most 16 caches, found 17",
    ]);
    assert.deepEqual(parseErrors(`engine: microvm\ncaches: {key: a}\n${STEPS}`), [
      'wf.yml:2:10: caches.key: expected a binary cache URL such as https://nix-community.cachix.org, found "key"',
    ]);
  });

  it("refuses a microvm cache written as a bare host, as spindle's microvm engine does, naming the https:// form (a real file's)", () => {
    assert.deepEqual(
      parseErrors(`engine: microvm\nimage: nixos\ncaches:\n  cache.joinemm.dev: "cache.joinemm.dev:AAAA"\n${STEPS}`),
      [
        'wf.yml:4:3: caches["cache.joinemm.dev"]: expected a binary cache URL such as https://nix-community.cachix.org, found "cache.joinemm.dev"; spindle\'s microvm engine refuses it as well (a cache URL must be http:// or https://), so the workflow would not start there either: write https://cache.joinemm.dev',
      ],
    );
  });
});

describe("parseWorkflow on artifacts:", () => {
  it("reads name, patterns made absolute (a relative one under /work), when and required, with their defaults", () => {
    const workflow = parseOk(
      [
        "artifacts:",
        "  - name: junit",
        "    paths: /outputs/junit/**/*.xml",
        "    when: failure",
        "    required: true",
        "  - name: dist.v1_x-y",
        "    paths: [dist/*.tgz, ./build//out/, /work/a]",
        STEPS,
      ].join("\n"),
    );
    assert.deepEqual(workflow.artifacts, [
      {
        name: "junit",
        paths: ["/outputs/junit/**/*.xml"],
        when: "failure",
        required: true,
        position: { line: 2, column: 5 },
      },
      {
        name: "dist.v1_x-y",
        paths: ["/work/dist/*.tgz", "/work/build/out", "/work/a"],
        when: "success",
        required: false,
        position: { line: 6, column: 5 },
      },
    ]);
  });

  it("reports every problem of every artifact at its own place", () => {
    const errors = parseErrors(
      [
        "artifacts:",
        "  - name: ../evil", // 2
        "    paths: [/etc/passwd, /outputs, '/work/[a', ../up]", // 3
        "    when: succes", // 4
        "    required: maybe", // 5
        "  - name: .", // 6
        "    paths: []", // 7
        "  - name: report", // 8
        "    paths: a",
        "  - name: Report", // 10
        "    paths: b",
        "    if: always", // 12
        "  - paths: x", // 13
        STEPS,
      ].join("\n"),
    );
    assert.deepEqual(errors, [
      'wf.yml:2:11: artifacts[0].name: expected a name of letters, digits, `.`, `_` and `-` (it becomes a directory of its own), other than . and .., found "../evil"',
      'wf.yml:3:13: artifacts[0].paths[0]: expected a glob pattern under /outputs or /work (a relative one is under /work), such as /outputs/**/*.xml; "/etc/passwd" is not under /outputs or /work; artifacts are collected from there (a relative path is under /work)',
      'wf.yml:3:26: artifacts[0].paths[1]: expected a glob pattern under /outputs or /work (a relative one is under /work), such as /outputs/**/*.xml; "/outputs" names the directory /outputs itself; name its files, such as /outputs/**',
      'wf.yml:3:36: artifacts[0].paths[2]: expected a glob pattern under /outputs or /work (a relative one is under /work), such as /outputs/**/*.xml; "/work/[a" has a `[` without its `]` (within one `/`-separated part)',
      'wf.yml:3:48: artifacts[0].paths[3]: expected a glob pattern under /outputs or /work (a relative one is under /work), such as /outputs/**/*.xml; "../up" has a `..` segment; write the path it means, absolute or relative to /work',
      'wf.yml:4:11: artifacts[0].when: expected one of success, failure, always; found "succes"; did you mean `success`?',
      'wf.yml:5:15: artifacts[0].required: expected true or false, found "maybe"',
      'wf.yml:6:11: artifacts[1].name: expected a name of letters, digits, `.`, `_` and `-` (it becomes a directory of its own), other than . and .., found "."',
      "wf.yml:7:12: artifacts[1].paths: expected at least one pattern, such as /outputs/report.html or dist/*.tgz, found an empty list",
      'wf.yml:10:11: artifacts[3].name: duplicate artifact name "Report", already used by artifacts[2] at wf.yml:8:11 (names that differ only in case count as one); each artifact gets a directory of its own',
      "wf.yml:12:5: artifacts[3].if: unknown key; did you mean `when`?",
      "wf.yml:13:5: artifacts[4]: expected the key `name`, found none",
    ]);
  });

  it("refuses a name longer than 100 characters and more than 32 artifacts", () => {
    assert.deepEqual(parseErrors(`artifacts:\n  - name: ${"a".repeat(101)}\n    paths: x\n${STEPS}`), [
      "wf.yml:2:11: artifacts[0].name: expected a name of at most 100 characters, found 101",
    ]);
    const many = Array.from({ length: 33 }, (_, index) => `  - {name: a${index}, paths: p}`).join("\n");
    assert.deepEqual(parseErrors(`artifacts:\n${many}\n${STEPS}`), [
      "wf.yml:2:3: artifacts: expected at most 32 artifacts, found 33",
    ]);
  });

  it("suggests caches and artifacts for a misspelt top-level key", () => {
    assert.deepEqual(parseErrors(`cache: []\nartifact: []\n${STEPS}`), [
      "wf.yml:1:1: cache: unknown key; did you mean `caches`?",
      "wf.yml:2:1: artifact: unknown key; did you mean `artifacts`?",
    ]);
  });
});
