import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { checkGlobPattern, toPicomatchPattern } from "../../src/workflow/glob-pattern.js";

describe("checkGlobPattern", () => {
  it("accepts what doublestar accepts: plain names, *, **, ?, classes, braces, escapes", () => {
    for (const pattern of [
      "main",
      "release/**",
      "**",
      "v*",
      "feature-*-test",
      "v?.?",
      "[a-c]x",
      "[^a]x",
      "{main,dev}",
      "a\\*",
      "release-**",
      "{a}",
    ]) {
      assert.equal(checkGlobPattern(pattern), undefined, pattern);
    }
  });

  it("refuses what doublestar refuses as a bad pattern", () => {
    assert.equal(checkGlobPattern("release/["), "has a `[` without its `]` (within one `/`-separated part)");
    assert.equal(checkGlobPattern("[a/b]"), "has a `[` without its `]` (within one `/`-separated part)");
    assert.equal(checkGlobPattern("{a/b,c}"), "has a `{` without its `}` (within one `/`-separated part)");
    assert.equal(checkGlobPattern("v\\"), "ends in a `\\` that escapes nothing");
    assert.equal(checkGlobPattern("x[]"), "has an empty character class `[]`");
    assert.equal(checkGlobPattern("[a-]"), "has a `-` in a character class that does not stand between two characters");
    assert.equal(checkGlobPattern("[-a]"), "has a `-` in a character class that does not stand between two characters");
  });

  it("refuses `..`, which no git branch or tag contains, but not inside a class", () => {
    assert.equal(
      checkGlobPattern("v{1..3}"),
      "contains `..`, which no git branch or tag name contains, so it could never match",
    );
    assert.equal(
      checkGlobPattern("a/../b"),
      "contains `..`, which no git branch or tag name contains, so it could never match",
    );
    assert.equal(checkGlobPattern("[.][.]"), undefined);
  });

  it("refuses an empty pattern", () => {
    assert.equal(checkGlobPattern(""), "is empty");
  });
});

describe("toPicomatchPattern", () => {
  it("leaves the common patterns as they are", () => {
    for (const pattern of ["main", "release/**", "v*", "{main,dev}", "[^a]x", "a\\*"])
      assert.equal(toPicomatchPattern(pattern), pattern);
  });

  it("escapes what picomatch would read as extglobs, groups or negation", () => {
    assert.equal(toPicomatchPattern("!main"), "\\!main");
    assert.equal(toPicomatchPattern("+(a|b)"), "\\+\\(a\\|b\\)");
    assert.equal(toPicomatchPattern("@x"), "\\@x");
  });

  it("keeps a leading ! of a class a character, and doubles a brace group's only alternative", () => {
    assert.equal(toPicomatchPattern("[!a]x"), "[\\!a]x");
    assert.equal(toPicomatchPattern("{a}"), "{a,a}");
    assert.equal(toPicomatchPattern("a{b,c{d}}"), "a{b,c{d,d}}");
  });
});
