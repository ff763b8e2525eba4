import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { hashCheckoutFiles } from "../../src/cache/hash-files.js";
import { InputError } from "../../src/core/errors.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const sha256 = (data: string | Buffer): string => createHash("sha256").update(data).digest("hex");
const EMPTY = sha256("");

/** A checkout with these files (relative path → contents). */
function checkout(files: Record<string, string>): string {
  const dir = makeTestTempDir("hash-files-");
  for (const [path, contents] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), contents);
  }
  return dir;
}

/** The documented hash: sha256 over `path NUL sha256(contents) LF` of each file, sorted by path. */
function expectedHash(files: Record<string, string>): string {
  return sha256(
    Object.keys(files)
      .sort()
      .map((path) => `${path}\0${sha256(files[path]!)}\n`)
      .join(""),
  );
}

describe("hashCheckoutFiles", () => {
  it("hashes the sorted relative paths and contents of the matching files, and only those", async () => {
    const dir = checkout({
      "package-lock.json": "{}",
      "a/go.sum": "x",
      "b/c/go.sum": "y",
      ".hidden/go.sum": "z",
      "a/go.mod": "m",
    });
    const hashed = await hashCheckoutFiles(dir, ["package-lock.json", "**/go.sum"]);
    assert.deepEqual(hashed, {
      hash: expectedHash({ "package-lock.json": "{}", "a/go.sum": "x", "b/c/go.sum": "y", ".hidden/go.sum": "z" }),
      files: 4,
      warnings: [],
    });
    assert.equal(
      (await hashCheckoutFiles(dir, ["**/go.sum", "package-lock.json"])).hash,
      hashed.hash,
      "the patterns' order does not matter",
    );
  });

  it("reads ./ and repeated slashes in a pattern as the checkout's own names", async () => {
    const dir = checkout({ "src/a.lock": "a", "b.lock": "b" });
    assert.equal(
      (await hashCheckoutFiles(dir, ["./src//*.lock", "./b.lock"])).hash,
      expectedHash({ "src/a.lock": "a", "b.lock": "b" }),
    );
  });

  it("changes when a matching file changes, is renamed or is added, not when another file does", async () => {
    const dir = checkout({ "lock/a.lock": "1", "other.txt": "o" });
    const before = (await hashCheckoutFiles(dir, ["lock/*.lock"])).hash;
    writeFileSync(join(dir, "other.txt"), "changed");
    assert.equal((await hashCheckoutFiles(dir, ["lock/*.lock"])).hash, before);
    writeFileSync(join(dir, "lock", "a.lock"), "2");
    const changed = (await hashCheckoutFiles(dir, ["lock/*.lock"])).hash;
    assert.notEqual(changed, before);
    renameSync(join(dir, "lock", "a.lock"), join(dir, "lock", "b.lock"));
    const renamed = (await hashCheckoutFiles(dir, ["lock/*.lock"])).hash;
    assert.notEqual(renamed, changed);
    writeFileSync(join(dir, "lock", "c.lock"), "3");
    assert.notEqual((await hashCheckoutFiles(dir, ["lock/*.lock"])).hash, renamed);
  });

  it("hashes nothing, with a warning, when no file matches; a directory is not a file", async () => {
    const dir = checkout({ "src/main.c": "int main;" });
    assert.deepEqual(await hashCheckoutFiles(dir, ["src", "*.lock"]), {
      hash: EMPTY,
      files: 0,
      warnings: ['hashFiles "src" "*.lock" matched no file in the checkout; it hashes nothing'],
    });
  });

  it("hashes a symlink to a file inside the checkout by its target's contents, and follows none out of the checkout", async () => {
    const outside = checkout({ "secret.lock": "outside", "dir/x.lock": "outside too" });
    const dir = checkout({ "real.lock": "inside" });
    symlinkSync("real.lock", join(dir, "link.lock"));
    symlinkSync(join(outside, "secret.lock"), join(dir, "escape.lock"));
    symlinkSync(join(outside, "dir"), join(dir, "linkdir"));
    symlinkSync("missing", join(dir, "dangling.lock"));
    const hashed = await hashCheckoutFiles(dir, ["**/*.lock", "linkdir/x.lock"]);
    assert.equal(hashed.hash, expectedHash({ "real.lock": "inside", "link.lock": "inside" }));
    assert.equal(hashed.files, 2);
    assert.deepEqual([...hashed.warnings].sort(), [
      "the symlink dangling.lock points at nothing; not hashed",
      "the symlink escape.lock points outside the checkout; not followed, not hashed",
    ]);
  });

  it("streams a file larger than any single read and hashes its whole contents", async () => {
    const big = "0123456789abcdef".repeat(1 << 20); // 16 MiB
    const dir = checkout({ "big.bin": big });
    assert.equal((await hashCheckoutFiles(dir, ["big.bin"])).hash, expectedHash({ "big.bin": big }));
  });

  it(
    "refuses a matching file it cannot read as bad input, naming it",
    { skip: process.getuid?.() === 0 ? "root reads any file" : false },
    async () => {
      const dir = checkout({ "a.lock": "x" });
      chmodSync(join(dir, "a.lock"), 0o000);
      await assert.rejects(
        hashCheckoutFiles(dir, ["*.lock"]),
        (error) => error instanceof InputError && /hashFiles: cannot read a\.lock: EACCES/.test(error.message),
      );
    },
  );

  it("refuses a checkout that is not there", async () => {
    await assert.rejects(
      hashCheckoutFiles("/nonexistent/checkout", ["a"]),
      (error) =>
        error instanceof InputError && /cannot read the checkout \/nonexistent\/checkout: ENOENT/.test(error.message),
    );
  });
});
