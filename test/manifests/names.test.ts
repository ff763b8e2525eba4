import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildJobName, buildRunIdLabel, isAcceptableRunId } from "../../src/manifests/names.js";

const DNS_1123_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const LABEL_VALUE = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;

describe("buildJobName", () => {
  it("keeps a clean run id as is after the prefix", () => {
    assert.equal(buildJobName("42"), "knotless-run-42");
    assert.equal(buildJobName("abc-123"), "knotless-run-abc-123");
  });

  it("makes a valid DNS-1123 label of at most 63 characters whatever the run id", () => {
    const ids = ["UPPER_case.id", "a".repeat(200), "--x--", "!!!", "é", "run/with/slashes", "9".repeat(50), "-"];
    for (const id of ids) {
      const name = buildJobName(id);
      assert.ok(name.length <= 63, `${name} is ${name.length} long`);
      assert.match(name, DNS_1123_LABEL, id);
      assert.ok(name.startsWith("knotless-run-"), name);
    }
  });

  it("keeps distinct run ids distinct after cleaning them", () => {
    assert.notEqual(buildJobName("Run_1"), buildJobName("run-1"));
    assert.notEqual(buildJobName("a".repeat(100) + "x"), buildJobName("a".repeat(100) + "y"));
  });
});

describe("buildRunIdLabel", () => {
  it("returns a valid label value for any run id", () => {
    for (const id of ["42", "Run_1.x", "a".repeat(100), "run/with/slashes", "!x!", "."])
      assert.match(buildRunIdLabel(id), LABEL_VALUE, id);
  });

  it("leaves a valid label value unchanged", () => {
    assert.equal(buildRunIdLabel("20261129-171710-cdaa78"), "20261129-171710-cdaa78");
  });
});

describe("isAcceptableRunId", () => {
  it("accepts printable ids and refuses empty, spaced, control and overlong ones", () => {
    assert.equal(isAcceptableRunId("abc-1_2.3"), true);
    for (const bad of ["", "a b", "a\nb", "x".repeat(129)])
      assert.equal(isAcceptableRunId(bad), false, JSON.stringify(bad));
  });
});
