// Removing an entry file: only the inode that was listed, never a successor saved under the same name meanwhile.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { removeEntryFile } from "../../src/cache/remove-entry.js";
import { makeTestTempDir } from "../support/temp-dir.js";

function makeRoot(): { root: string; path: string } {
  const root = makeTestTempDir("knotless-cache-rm-");
  mkdirSync(join(root, "v1", "tmp"), { recursive: true });
  mkdirSync(join(root, "v1", "repos", "r"), { recursive: true });
  return { root, path: join(root, "v1", "repos", "r", "k.entry") };
}

describe("removeEntryFile", () => {
  it("removes the file it was told the inode of, and leaves no temp file", async () => {
    const { root, path } = makeRoot();
    writeFileSync(path, "old");
    assert.equal(await removeEntryFile(root, path, statSync(path).ino), true);
    assert.equal(existsSync(path), false);
    assert.deepEqual(readdirSync(join(root, "v1", "tmp")), []);
  });

  it("puts back a successor that took the name since the listing, and says it removed nothing", async () => {
    const { root, path } = makeRoot();
    writeFileSync(path, "old");
    const listedIno = statSync(path).ino;
    rmSync(path);
    writeFileSync(join(root, "keep-inode-busy"), "x");
    writeFileSync(path, "successor");
    assert.notEqual(statSync(path).ino, listedIno);
    assert.equal(await removeEntryFile(root, path, listedIno), false);
    assert.equal(readFileSync(path, "utf8"), "successor");
    assert.deepEqual(readdirSync(join(root, "v1", "tmp")), []);
  });

  it("says false for a file already gone", async () => {
    const { root, path } = makeRoot();
    assert.equal(await removeEntryFile(root, path, 1), false);
  });
});
