import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CacheEntry } from "../../src/workflow/cache-types.js";
import { selectEntry } from "../../src/cache/select-entry.js";

const entry = (key: string, createdAt: number): CacheEntry => ({
  repo: "r",
  key,
  bytes: 1,
  sha256: "0",
  compression: "gzip",
  createdAt,
  lastUsedAt: createdAt,
});
const entries = [entry("deps-aaa", 1), entry("deps-bbb", 3), entry("deps-ccc", 2), entry("tools-x", 9)];

describe("selectEntry", () => {
  it("restores the exact key when it is saved, whatever the fallbacks say", () => {
    assert.deepEqual(selectEntry(entries, { key: "deps-ccc", restoreKeys: ["tools-"] }), {
      kind: "exact",
      entry: entries[2],
    });
  });

  it("falls back to the newest entry of the first prefix that matches any, in the order given", () => {
    assert.deepEqual(selectEntry(entries, { key: "deps-zzz", restoreKeys: ["nothing-", "deps-", "tools-"] }), {
      kind: "fallback",
      entry: entries[1],
      prefix: "deps-",
    });
  });

  it("is a miss when neither the key nor any prefix matches, and never matches a prefix against the key alone", () => {
    assert.deepEqual(selectEntry(entries, { key: "deps", restoreKeys: ["build-"] }), { kind: "miss" });
    assert.deepEqual(selectEntry([], { key: "deps-aaa", restoreKeys: ["deps-"] }), { kind: "miss" });
  });
});
