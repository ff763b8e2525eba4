// The kubeconfig file: written 0600 whatever the umask, atomically; a target that others can read, a link or a directory is refused.
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { InputError } from "../../../src/core/errors.js";
import { checkPrivateTarget, writePrivateFile } from "../../../src/ops/credentials/private-file.js";
import { makeTestTempDir } from "../../support/temp-dir.js";

const modeOf = (path: string): number => statSync(path).mode & 0o777;

describe("writePrivateFile", () => {
  it("creates the file with mode 0600 even under a permissive umask, leaving no temporary file", () => {
    const dir = makeTestTempDir("private-file-");
    const path = join(dir, "kubeconfig");
    const previous = process.umask(0);
    try {
      writePrivateFile(path, "secret\n");
    } finally {
      process.umask(previous);
    }
    assert.equal(modeOf(path), 0o600);
    assert.equal(readFileSync(path, "utf8"), "secret\n");
    assert.deepEqual(readdirSync(dir), ["kubeconfig"]);
  });

  it("rewrites a file that is already private", () => {
    const path = join(makeTestTempDir("private-file-"), "kubeconfig");
    writeFileSync(path, "old", { mode: 0o600 });
    writePrivateFile(path, "new");
    assert.deepEqual([readFileSync(path, "utf8"), modeOf(path)], ["new", 0o600]);
  });

  it("refuses a file that exists with looser permissions, and leaves it as it was", () => {
    const path = join(makeTestTempDir("private-file-"), "kubeconfig");
    writeFileSync(path, "old");
    chmodSync(path, 0o644);
    assert.throws(
      () => writePrivateFile(path, "new"),
      (e) => e instanceof InputError && /exists with mode 0644, which lets others read or write it/.test(e.message),
    );
    assert.deepEqual([readFileSync(path, "utf8"), modeOf(path)], ["old", 0o644]);
    chmodSync(path, 0o620);
    assert.throws(() => checkPrivateTarget(path), InputError);
  });

  it("refuses a symbolic link, a directory and a missing directory", () => {
    const dir = makeTestTempDir("private-file-");
    writeFileSync(join(dir, "target"), "", { mode: 0o600 });
    symlinkSync(join(dir, "target"), join(dir, "link"));
    mkdirSync(join(dir, "sub"));
    assert.throws(() => checkPrivateTarget(join(dir, "link")), /symbolic link/);
    assert.throws(() => checkPrivateTarget(join(dir, "sub")), /not a regular file/);
    assert.throws(() => checkPrivateTarget(join(dir, "nope", "kubeconfig")), /does not exist/);
  });
});
