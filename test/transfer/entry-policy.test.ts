// Tests the pure accept/refuse rules for output archive entries.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { classifyEntry, findSymlinkTargetProblem, splitEntryPath } from "../../src/transfer/entry-policy.js";

describe("splitEntryPath", () => {
  it("drops leading ./, empty and . components", () => {
    assert.deepEqual(splitEntryPath("./a//b/./c.txt"), { parts: ["a", "b", "c.txt"] });
    assert.deepEqual(splitEntryPath("./"), { parts: [] });
  });

  it("refuses an absolute path", () => {
    assert.deepEqual(splitEntryPath("/etc/passwd"), { reason: "absolute path" });
  });

  it("refuses an entry whose path climbs out with ..", () => {
    for (const name of ["..", "../x", "a/../../x", "./a/..", "a/../b"]) {
      assert.deepEqual(splitEntryPath(name), { reason: "path contains a .. component" }, name);
    }
  });

  it("refuses a path with a NUL byte", () => {
    assert.deepEqual(splitEntryPath("a\0b"), { reason: "path contains a NUL byte" });
  });

  it("keeps names that merely contain dots", () => {
    assert.deepEqual(splitEntryPath("./..hidden/...txt"), { parts: ["..hidden", "...txt"] });
  });
});

describe("findSymlinkTargetProblem", () => {
  it("accepts targets that stay inside the destination", () => {
    assert.equal(findSymlinkTargetProblem(["link"], "file.txt"), undefined);
    assert.equal(findSymlinkTargetProblem(["a", "b", "link"], "../../c/d"), undefined);
    assert.equal(findSymlinkTargetProblem(["a", "link"], ".."), undefined);
    assert.equal(findSymlinkTargetProblem(["link"], "."), undefined);
  });

  it("refuses an absolute target", () => {
    assert.match(findSymlinkTargetProblem(["link"], "/etc/passwd") ?? "", /is absolute/);
  });

  it("refuses a target that climbs above the destination", () => {
    assert.match(findSymlinkTargetProblem(["link"], "../x") ?? "", /resolves outside the destination/);
    assert.match(findSymlinkTargetProblem(["a", "link"], "../../x") ?? "", /resolves outside the destination/);
  });

  it("refuses a .. after a name because another symlink could make it escape", () => {
    assert.match(findSymlinkTargetProblem(["m"], "x/..") ?? "", /has \.\. after a name/);
    assert.match(findSymlinkTargetProblem(["a", "b", "m"], "../x/../y") ?? "", /has \.\. after a name/);
  });

  it("refuses an empty target", () => {
    assert.equal(findSymlinkTargetProblem(["link"], ""), "symlink has an empty target");
  });
});

describe("classifyEntry", () => {
  it("treats ./ as the archive root", () => {
    assert.deepEqual(classifyEntry({ name: "./", type: "directory", linkname: null }), { kind: "root" });
  });

  it("accepts files, directories and inside symlinks with their split paths", () => {
    assert.deepEqual(classifyEntry({ name: "./a/b.txt", type: "file", linkname: null }), {
      kind: "file",
      parts: ["a", "b.txt"],
    });
    assert.deepEqual(classifyEntry({ name: "./a/", type: "directory", linkname: null }), {
      kind: "directory",
      parts: ["a"],
    });
    assert.deepEqual(classifyEntry({ name: "./a/l", type: "symlink", linkname: "../b" }), {
      kind: "symlink",
      parts: ["a", "l"],
      target: "../b",
    });
  });

  it("refuses hard links, devices, fifos and unknown types with a reason naming the type", () => {
    assert.deepEqual(classifyEntry({ name: "./h", type: "link", linkname: "./a" }), {
      kind: "refuse",
      reason: 'hard link to "./a" is not allowed',
    });
    assert.deepEqual(classifyEntry({ name: "./c", type: "character-device", linkname: null }), {
      kind: "refuse",
      reason: "character device is not allowed",
    });
    assert.deepEqual(classifyEntry({ name: "./b", type: "block-device", linkname: null }), {
      kind: "refuse",
      reason: "block device is not allowed",
    });
    assert.deepEqual(classifyEntry({ name: "./f", type: "fifo", linkname: null }), {
      kind: "refuse",
      reason: "fifo is not allowed",
    });
    assert.deepEqual(classifyEntry({ name: "./s", type: null, linkname: null }), {
      kind: "refuse",
      reason: "unsupported entry type unknown",
    });
    assert.deepEqual(classifyEntry({ name: "./s", type: "contiguous-file", linkname: null }), {
      kind: "refuse",
      reason: "unsupported entry type contiguous-file",
    });
  });

  it("refuses a file entry without a name", () => {
    assert.deepEqual(classifyEntry({ name: "./", type: "file", linkname: null }), {
      kind: "refuse",
      reason: "empty path",
    });
  });

  it("refuses a symlink whose target escapes", () => {
    const verdict = classifyEntry({ name: "./up", type: "symlink", linkname: "../../x" });
    assert.equal(verdict.kind, "refuse");
  });
});
