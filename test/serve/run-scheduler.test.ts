import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { pickRunsToStart } from "../../src/serve/run-scheduler.js";

const q = (runId: string, repo: string | null = "a") => ({ runId, repo });

describe("pickRunsToStart", () => {
  it("starts pending runs in submission order until --max-runs are running", () => {
    assert.deepEqual(
      pickRunsToStart([q("1"), q("2"), q("3")], [q("0")], { maxRuns: 3 }).map((r) => r.runId),
      ["1", "2"],
    );
  });

  it("starts nothing when every slot is taken", () => {
    assert.deepEqual(pickRunsToStart([q("1")], [q("a1"), q("a2")], { maxRuns: 2 }), []);
  });

  it("passes over a repository at its --max-runs-per-repo limit so another repository's later run goes first", () => {
    const pending = [q("a2", "a"), q("a3", "a"), q("b1", "b"), q("c1", null)];
    assert.deepEqual(
      pickRunsToStart(pending, [q("a1", "a")], { maxRuns: 4, maxRunsPerRepo: 1 }).map((r) => r.runId),
      ["b1", "c1"],
    );
  });

  it("counts the runs it picks against the per-repository limit too", () => {
    const pending = [q("a1", "a"), q("a2", "a"), q("a3", "a"), q("b1", "b")];
    assert.deepEqual(
      pickRunsToStart(pending, [], { maxRuns: 10, maxRunsPerRepo: 2 }).map((r) => r.runId),
      ["a1", "a2", "b1"],
    );
  });
});
