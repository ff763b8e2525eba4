import assert from "node:assert/strict";
import { statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { makeDirectorySync } from "../../src/core/make-directory.js";
import { makeTestTempDir } from "../support/temp-dir.js";

describe("makeDirectorySync", () => {
  it("makes a directory and every missing parent", () => {
    const dir = join(makeTestTempDir("mkdir-"), "a", "b", "c");
    makeDirectorySync(dir);
    assert.ok(statSync(dir).isDirectory());
  });

  it("accepts a directory that already exists", () => {
    const dir = makeTestTempDir("mkdir-");
    makeDirectorySync(dir);
    assert.ok(statSync(dir).isDirectory());
  });

  it("fails at once with ENOENT under /proc, where node 20's recursive mkdir spins forever", () => {
    assert.throws(
      () => makeDirectorySync("/proc/forbidden/out"),
      (error: NodeJS.ErrnoException) => error.code === "ENOENT",
    );
  });

  it("fails with ENOTDIR when a file stands where a parent directory should be", () => {
    const file = join(makeTestTempDir("mkdir-"), "file");
    writeFileSync(file, "");
    assert.throws(
      () => makeDirectorySync(join(file, "out")),
      (error: NodeJS.ErrnoException) => error.code === "ENOTDIR",
    );
  });
});
