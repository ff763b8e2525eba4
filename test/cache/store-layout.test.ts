// Where the store lives by default, and how names become paths.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defaultCacheDir, entryPath } from "../../src/cache/store-layout.js";

describe("defaultCacheDir", () => {
  it("is under $XDG_CACHE_HOME when that is absolute, else under ~/.cache", () => {
    assert.equal(
      defaultCacheDir({ XDG_CACHE_HOME: "/var/cache/ci", HOME: "/home/op" }),
      "/var/cache/ci/knotless-runner-k8s",
    );
    assert.equal(defaultCacheDir({ HOME: "/home/op" }), "/home/op/.cache/knotless-runner-k8s");
    assert.equal(
      defaultCacheDir({ XDG_CACHE_HOME: "relative/cache", HOME: "/home/op" }),
      "/home/op/.cache/knotless-runner-k8s",
    );
  });

  it("falls back to the account's home, and asks for --cache-dir when that is not absolute either", () => {
    assert.equal(
      defaultCacheDir({ XDG_CACHE_HOME: "" }, () => "/home/acct"),
      "/home/acct/.cache/knotless-runner-k8s",
    );
    assert.throws(() => defaultCacheDir({}, () => ""), /give the cache directory with --cache-dir/);
  });
});

describe("entryPath", () => {
  it("names an entry by the hashes of its repository and key only", () => {
    assert.match(entryPath("/c", "../../x", "/etc/passwd"), /^\/c\/v1\/repos\/[0-9a-f]{64}\/[0-9a-f]{64}\.entry$/);
    assert.notEqual(entryPath("/c", "a", "b"), entryPath("/c", "b", "a"));
  });
});
