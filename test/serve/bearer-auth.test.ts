import assert from "node:assert/strict";
import { chmodSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { InputError } from "../../src/core/errors.js";
import { createBearerCheck, readTokenFile, watchTokenFile } from "../../src/serve/bearer-auth.js";
import { makeTestTempDir } from "../support/temp-dir.js";

describe("bearer auth", () => {
  const dir = makeTestTempDir("serve-auth-");
  const tokenFile = (name: string, content: string, mode: number): string => {
    const path = join(dir, name);
    writeFileSync(path, content);
    chmodSync(path, mode);
    return path;
  };

  it("reads a token file only its owner can read, without the trailing newline", () => {
    assert.equal(readTokenFile(tokenFile("ok", "s3cret-of-16-chars\n", 0o600)), "s3cret-of-16-chars");
  });

  it("refuses a token file readable by group or others, naming its mode", () => {
    assert.throws(
      () => readTokenFile(tokenFile("loose", "s3cret", 0o644)),
      (e: unknown) => e instanceof InputError && /0644/.test(e.message) && /chmod 600/.test(e.message),
    );
    assert.throws(() => readTokenFile(tokenFile("group", "s3cret", 0o640)), InputError);
  });

  it("refuses an empty token file and a missing one", () => {
    assert.throws(() => readTokenFile(tokenFile("empty", "\n", 0o600)), /empty/);
    assert.throws(() => readTokenFile(join(dir, "absent")), /cannot read/);
  });

  it("refuses a token shorter than 16 characters, saying how long one must be", () => {
    assert.throws(
      () => readTokenFile(tokenFile("short", "abcde\n", 0o600)),
      (e: unknown) => e instanceof InputError && /5 characters/.test(e.message) && /at least 16/.test(e.message),
    );
    assert.equal(readTokenFile(tokenFile("sixteen", "0123456789abcdef\n", 0o600)), "0123456789abcdef");
  });

  it("takes a rotated token file's new token without a restart, and the old one no more", () => {
    const path = tokenFile("rotated", "first-token-0123456789\n", 0o600);
    const warnings: string[] = [];
    const check = createBearerCheck(watchTokenFile(path, readTokenFile(path), (m) => warnings.push(m)));
    assert.equal(check("Bearer first-token-0123456789"), true);
    writeFileSync(path, "second-token-0123456789-longer\n");
    assert.equal(check("Bearer second-token-0123456789-longer"), true);
    assert.equal(check("Bearer first-token-0123456789"), false);
    assert.equal(warnings.length, 1);
    assert.doesNotMatch(warnings[0]!, /second-token/);
  });

  it("keeps the last good token when the token file becomes loose, too short or gone, and says why once", () => {
    const path = tokenFile("spoiled", "good-token-0123456789\n", 0o600);
    const warnings: string[] = [];
    const check = createBearerCheck(watchTokenFile(path, readTokenFile(path), (m) => warnings.push(m)));
    chmodSync(path, 0o644);
    assert.equal(check("Bearer good-token-0123456789"), true);
    assert.equal(check("Bearer good-token-0123456789"), true);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /open to group or others.*keeping the previous token/);
    chmodSync(path, 0o600);
    writeFileSync(path, "short\n");
    assert.equal(check("Bearer short"), false);
    assert.match(warnings.at(-1)!, /at least 16.*keeping the previous token/);
    unlinkSync(path);
    assert.equal(check("Bearer good-token-0123456789"), true);
    assert.match(warnings.at(-1)!, /cannot read.*keeping the previous token/);
  });

  it("accepts exactly `Bearer <token>` and nothing else", () => {
    const check = createBearerCheck("s3cret");
    assert.equal(check("Bearer s3cret"), true);
    assert.equal(check("bearer s3cret"), true);
    assert.equal(check("Bearer s3cre"), false);
    assert.equal(check("Bearer s3cret2"), false);
    assert.equal(check("Basic s3cret"), false);
    assert.equal(check(undefined), false);
    assert.equal(check("Bearer "), false);
  });
});
