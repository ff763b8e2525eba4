import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { matchWorkflow, type Trigger } from "../../src/workflow/match-trigger.js";
import type { WhenConstraint } from "../../src/workflow/workflow-types.js";
import { parseErrors, parseOk } from "./workflow-fixtures.js";

const push = (changedFiles?: string[]): Trigger => ({
  event: "push",
  branch: "main",
  ...(changedFiles ? { changedFiles } : {}),
});

describe("when[].paths against the changed files", () => {
  // patterns, changed files, whether the constraint {event: push, branch: main, paths} matches a push to main.
  const TABLE: ReadonlyArray<readonly [string[], string[], boolean]> = [
    [["src/**"], ["src/a.ts"], true],
    [["src/**"], ["src/deep/er/a.ts"], true],
    [["src/**"], ["README.md"], false],
    [["src/*"], ["src/deep/a.ts"], false],
    [["*.md"], ["docs/a.md"], false],
    [["**/*.md"], ["docs/a.md", "x.ts"], true],
    [["**/*.md"], ["a.md"], true],
    [["go.{mod,sum}"], ["go.sum"], true],
    [["src/**", "Cargo.toml"], ["Cargo.toml"], true],
    [["src/**"], [], false],
    [[".tangled/**"], [".tangled/workflows/ci.yml"], true],
  ];
  for (const [paths, files, expected] of TABLE) {
    it(`${expected ? "matches" : "does not match"} paths ${JSON.stringify(paths)} with changed files ${JSON.stringify(files)}`, () => {
      const when: WhenConstraint[] = [{ event: ["push"], branch: ["main"], paths }];
      assert.equal(matchWorkflow(when, push(files)).matched, expected);
    });
  }

  it("says which changed file and pattern matched, or how many files did not", () => {
    const when: WhenConstraint[] = [{ event: ["push"], branch: ["main"], paths: ["src/**"] }];
    assert.deepEqual(matchWorkflow(when, push(["README.md", "src/a.ts"])), {
      matched: true,
      reason: 'when[0] matched: event "push", branch "main", changed file "src/a.ts" ("src/**")',
    });
    assert.deepEqual(matchWorkflow(when, push(["README.md", "docs/x"])), {
      matched: false,
      reason: "no constraint of when matched: none of the 2 changed files matches paths src/**",
    });
  });

  it("assumes paths match when the trigger gives no changed files, and says so", () => {
    const when: WhenConstraint[] = [{ event: ["push"], branch: ["main"], paths: ["src/**"] }];
    assert.deepEqual(matchWorkflow(when, push()), {
      matched: true,
      reason:
        'when[0] matched: event "push", branch "main", paths assumed to match: the trigger gave no changed files (--changed-file)',
    });
  });

  it("still needs the branch to match, paths or not", () => {
    assert.equal(matchWorkflow([{ event: ["push"], branch: ["release"], paths: ["**"] }], push(["a"])).matched, false);
  });
});

describe("when[].types against a pull request's action", () => {
  const pr = (prAction?: string): Trigger => ({
    event: "pull_request",
    branch: "main",
    ...(prAction ? { prAction } : {}),
  });
  // types (undefined: not written), action (undefined: not given), whether it matches.
  const TABLE: ReadonlyArray<readonly [string[] | undefined, string | undefined, boolean]> = [
    [undefined, "opened", true],
    [undefined, "reopened", true],
    [undefined, "synchronize", true],
    [undefined, "closed", false],
    [undefined, "merged", false],
    [undefined, undefined, true],
    [["closed"], "closed", true],
    [["closed", "merged"], "merged", true],
    [["closed"], "opened", false],
    [["closed"], undefined, false],
    [["opened"], undefined, true],
  ];
  for (const [types, action, expected] of TABLE) {
    it(`${expected ? "matches" : "does not match"} action ${action ?? "(none, taken as opened)"} with types ${types ? JSON.stringify(types) : "(absent)"}`, () => {
      const when: WhenConstraint[] = [{ event: ["pull_request"], branch: ["main"], ...(types ? { types } : {}) }];
      assert.equal(matchWorkflow(when, pr(action)).matched, expected);
    });
  }

  it("names the default actions when an action is not among them, and ignores types for a push", () => {
    const when: WhenConstraint[] = [{ event: ["pull_request", "push"], branch: ["main"], types: ["closed"] }];
    assert.deepEqual(matchWorkflow([{ event: ["pull_request"], branch: ["main"] }], pr("merged")), {
      matched: false,
      reason:
        'no constraint of when matched: pull request action "merged" is not one of opened, reopened, synchronize (the default without `types`)',
    });
    assert.equal(matchWorkflow(when, push()).matched, true);
  });

  it("reads paths and types from a file, and refuses an action Tangled never sends with the closest one", () => {
    const workflow = parseOk(
      "when:\n  - event: pull_request\n    branch: main\n    types: [opened, closed]\n    paths: ['src/**']\nsteps: [{name: a, command: b}]\n",
    );
    assert.deepEqual(workflow.when, [
      {
        event: ["pull_request"],
        branch: ["main"],
        paths: ["src/**"],
        types: ["opened", "closed"],
        position: { line: 2, column: 5 },
      },
    ]);
    assert.deepEqual(
      parseErrors(
        "when:\n  - event: pull_request\n    branch: main\n    types: [synchronise]\nsteps: [{name: a, command: b}]\n",
      ),
      [
        'wf.yml:4:12: when[0].types: "synchronise" is not a pull request action Tangled sends (opened, reopened, synchronize, closed, merged); did you mean `synchronize`?',
      ],
    );
  });
});
