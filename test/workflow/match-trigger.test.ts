import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { deriveRefNames, matchGlob, matchWorkflow, type Trigger } from "../../src/workflow/match-trigger.js";
import type { WhenConstraint } from "../../src/workflow/workflow-types.js";
import { parseOk, readFixture } from "./workflow-fixtures.js";

describe("matchGlob", () => {
  // Tangled's own table for its pattern matching (workflow/def_test.go, TestMatchesPattern): name, pattern, result.
  const TANGLED: ReadonlyArray<readonly [string, string, boolean]> = [
    ["main", "main", true],
    ["feature", "main", false],
    ["v1.0.0", "v*", true],
    ["release-1.0", "*-1.0", true],
    ["feature-123-test", "feature-*-test", true],
    ["release-1.0.0", "release-**", true],
    ["release/1.0/hotfix", "release/**", true],
    ["foo/bar/baz/qux", "foo/**", true],
    ["feature/test", "release/**", false],
    ["v1.0.0", "release-*", false],
    ["release/v1.2.3", "release/*", true],
    ["release/1.0/hotfix", "release/*", false],
  ];
  // What doublestar v1's Match gives, read from its code: components split on /, ** a whole component or just *.
  const DOUBLESTAR: ReadonlyArray<readonly [string, string, boolean]> = [
    ["release", "release/**", false],
    ["a/b", "a/**/b", true],
    ["a/x/y/b", "a/**/b", true],
    ["x", "**/x", true],
    ["a/b/c", "**", true],
    ["a/b", "*", false],
    ["a/b", "a**b", false],
    ["aXb", "a**b", true],
    [".hidden", "*", true],
    ["feat/.x", "feat/*", true],
    ["v", "v*", true],
    ["v1", "v?", true],
    ["v/", "v?", false],
    ["main/", "main", false],
    ["!main", "!main", true],
    ["dev", "!main", false],
    ["a", "+(a)", false],
    ["+(a)", "+(a)", true],
    ["a", "(a|b)", false],
    ["(a|b)", "(a|b)", true],
    ["dev", "{main,dev}", true],
    ["a", "{a}", true],
    ["acd", "a{b,c{d}}", true],
    ["!x", "[!a]x", true],
    ["bx", "[!a]x", false],
    ["bx", "[^a]x", true],
    ["ax", "[^a]x", false],
    ["a]", "[[:alpha:]]", true],
    ["a", "[[:alpha:]]", false],
    ["a*", "a\\*", true],
    ["ab", "a\\*", false],
    ["Main", "main", false],
    ["{main,dev}", "{main,dev}", false],
    ["[!a]x", "[!a]x", false],
  ];

  for (const [name, pattern, expected] of [...TANGLED, ...DOUBLESTAR]) {
    it(`${expected ? "matches" : "does not match"} ${JSON.stringify(name)} with ${JSON.stringify(pattern)}`, () => {
      assert.equal(matchGlob(pattern, name), expected);
    });
  }

  it("matches nothing with a pattern doublestar would refuse", () => {
    assert.equal(matchGlob("release/[", "release/["), false);
    assert.equal(matchGlob("v{1..3}", "v2"), false);
  });
});

describe("deriveRefNames", () => {
  it("gives the branch of refs/heads/, the tag of refs/tags/, and a short name for other refs", () => {
    assert.deepEqual(deriveRefNames("refs/heads/release/1.0"), { branch: "release/1.0", refName: "release/1.0" });
    assert.deepEqual(deriveRefNames("refs/tags/v1.2.3"), { tag: "v1.2.3", refName: "v1.2.3" });
    assert.deepEqual(deriveRefNames("refs/pull/7/head"), { refName: "pull/7/head" });
    assert.deepEqual(deriveRefNames("main"), { refName: "main" });
  });
});

describe("matchWorkflow", () => {
  const push = (ref: string): Trigger => ({ event: "push", ref });
  const when: WhenConstraint[] = [
    { event: ["push", "pull_request"], branch: ["main", "release/**"] },
    { event: ["push"], tag: ["v*"] },
  ];

  it("always matches a workflow without when, and an empty when", () => {
    assert.deepEqual(matchWorkflow(undefined, push("refs/heads/dev")), {
      matched: true,
      reason: "no `when`: the workflow always matches",
    });
    assert.equal(matchWorkflow([], push("refs/heads/dev")).matched, true);
  });

  it("always matches a manual trigger, whatever when says", () => {
    assert.deepEqual(matchWorkflow([{ event: ["push"], branch: ["main"] }], { event: "manual" }), {
      matched: true,
      reason: "a manual trigger always matches",
    });
  });

  it("matches a push to a branch by a glob across segments, and says which constraint and pattern", () => {
    assert.deepEqual(matchWorkflow(when, push("refs/heads/release/1.0/hotfix")), {
      matched: true,
      reason: 'when[0] matched: event "push", branch "release/1.0/hotfix" ("release/**")',
    });
    assert.deepEqual(matchWorkflow(when, push("refs/heads/main")), {
      matched: true,
      reason: 'when[0] matched: event "push", branch "main"',
    });
  });

  it("matches a pushed tag against tag patterns only", () => {
    assert.deepEqual(matchWorkflow(when, push("refs/tags/v2.0.0")), {
      matched: true,
      reason: 'when[1] matched: event "push", tag "v2.0.0" ("v*")',
    });
    assert.equal(matchWorkflow([{ event: ["push"], branch: ["**"] }], push("refs/tags/v1")).matched, false);
  });

  it("says for each constraint why it did not match", () => {
    assert.deepEqual(matchWorkflow(when, push("refs/heads/dev")), {
      matched: false,
      reason:
        'no constraint of when matched: when[0]: branch "dev" is not one of main, release/**; when[1]: lists no `branch`, so branch "dev" cannot match',
    });
  });

  it("names the branch and the patterns when a single constraint does not match", () => {
    assert.deepEqual(matchWorkflow([{ event: ["push"], branch: ["main", "release/**"] }], push("refs/heads/dev")), {
      matched: false,
      reason: 'no constraint of when matched: branch "dev" is not one of main, release/**',
    });
  });

  it("requires the event to be listed, exactly", () => {
    assert.deepEqual(matchWorkflow([{ event: ["pull_request"], branch: ["main"] }], push("refs/heads/main")), {
      matched: false,
      reason: 'no constraint of when matched: event "push" is not one of pull_request',
    });
  });

  it("matches a pull request by its target branch", () => {
    assert.equal(matchWorkflow(when, { event: "pull_request", branch: "release/2" }).matched, true);
    assert.equal(matchWorkflow(when, { event: "pull_request", branch: "dev" }).matched, false);
  });

  it("needs every field of one constraint to match: event and branch together", () => {
    assert.equal(
      matchWorkflow(
        [
          { event: ["pull_request"], branch: ["dev"] },
          { event: ["push"], branch: ["main"] },
        ],
        push("refs/heads/dev"),
      ).matched,
      false,
    );
  });

  it("lets a constraint with only an event match only a trigger without a ref, as in Tangled", () => {
    assert.equal(matchWorkflow([{ event: ["push"] }], push("refs/heads/main")).matched, false);
    assert.deepEqual(matchWorkflow([{ event: ["push"] }], { event: "push" }), {
      matched: true,
      reason: 'when[0] matched: event "push"',
    });
  });

  it("matches no constraint with a ref that is neither a branch nor a tag", () => {
    assert.deepEqual(matchWorkflow([{ event: ["push"], branch: ["**"] }], push("refs/notes/x")), {
      matched: false,
      reason: 'no constraint of when matched: ref "refs/notes/x" is neither a branch nor a tag',
    });
  });

  it("prefers an explicit branch over the one a ref gives", () => {
    assert.equal(
      matchWorkflow([{ event: ["push"], branch: ["main"] }], { event: "push", ref: "refs/heads/dev", branch: "main" })
        .matched,
      true,
    );
  });

  it("matches Tangled's own files as Tangled would", () => {
    const test = parseOk(readFixture("tangled/test.yml")).when;
    assert.equal(matchWorkflow(test, push("refs/heads/master")).matched, true);
    assert.equal(matchWorkflow(test, { event: "pull_request", branch: "master" }).matched, true);
    assert.equal(matchWorkflow(test, push("refs/heads/main")).matched, false);
    const release = parseOk(readFixture("tangled/release.yml")).when;
    assert.equal(matchWorkflow(release, push("refs/tags/release-2024")).matched, true);
    assert.equal(matchWorkflow(release, push("refs/tags/2024")).matched, false);
  });
});
