// Finding an executable on a PATH list, as a shell would.
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { describe, it } from "node:test";
import { findOnPath } from "../../src/util/find-on-path.js";
import { makeTestTempDir } from "../support/temp-dir.js";

function executable(path: string, mode = 0o755): string {
  writeFileSync(path, "#!/bin/sh\n");
  chmodSync(path, mode);
  return path;
}

describe("finding an executable on PATH", () => {
  it("takes the first directory that holds an executable file of that name", () => {
    const root = makeTestTempDir("find-on-path-");
    for (const dir of ["a", "b", "c"]) mkdirSync(join(root, dir));
    const second = executable(join(root, "b", "zstd"));
    executable(join(root, "c", "zstd"));
    assert.equal(findOnPath("zstd", [join(root, "a"), join(root, "b"), join(root, "c")].join(delimiter)), second);
  });

  it("passes over a file that is not executable, a directory of that name and relative entries", () => {
    const root = makeTestTempDir("find-on-path-");
    for (const dir of ["plain", "dir/zstd", "good"]) mkdirSync(join(root, dir), { recursive: true });
    executable(join(root, "plain", "zstd"), 0o644);
    const good = executable(join(root, "good", "zstd"));
    assert.equal(findOnPath("zstd", ["", ".", "relative/bin", join(root, "plain"), join(root, "dir"), join(root, "good")].join(delimiter)), good);
  });

  it("finds nothing on an empty or absent PATH", () => {
    assert.equal(findOnPath("zstd", ""), undefined);
    assert.equal(findOnPath("zstd", undefined), undefined);
  });
});
