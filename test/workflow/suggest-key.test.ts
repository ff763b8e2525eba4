import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { measureEditDistance, suggestName } from "../../src/workflow/suggest-key.js";

describe("measureEditDistance", () => {
  it("counts insertions, deletions, substitutions and swapped neighbours as one edit each", () => {
    assert.equal(measureEditDistance("environment", "environment"), 0);
    assert.equal(measureEditDistance("enviroment", "environment"), 1);
    assert.equal(measureEditDistance("comand", "command"), 1);
    assert.equal(measureEditDistance("stpes", "steps"), 1);
    assert.equal(measureEditDistance("kitten", "sitting"), 3);
    assert.equal(measureEditDistance("", "abc"), 3);
  });
});

describe("suggestName", () => {
  const TOP = [
    "when",
    "engine",
    "image",
    "shell",
    "timeout",
    "resources",
    "dependencies",
    "clone",
    "environment",
    "steps",
  ];

  it("suggests the closest key within a third of its length", () => {
    assert.equal(suggestName("enviroment", TOP), "environment");
    assert.equal(suggestName("dependecies", TOP), "dependencies");
    assert.equal(suggestName("Steps", TOP), "steps");
    assert.equal(suggestName("imag", TOP), "image");
  });

  it("suggests the key other CI systems' names stand for, when it is a candidate", () => {
    assert.equal(suggestName("env", TOP), "environment");
    assert.equal(suggestName("on", TOP), "when");
    assert.equal(suggestName("run", ["name", "command"]), "command");
    assert.equal(suggestName("run", TOP), undefined);
  });

  it("suggests nothing for a name far from every key", () => {
    assert.equal(suggestName("colour", TOP), undefined);
    assert.equal(suggestName("services", TOP), undefined);
  });
});
