import assert from "node:assert/strict";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { InputError } from "../../src/errors.js";
import { createBearerCheck, readTokenFile } from "../../src/serve/bearer-auth.js";
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
    assert.equal(readTokenFile(tokenFile("ok", "s3cret\n", 0o600)), "s3cret");
  });

  it("refuses a token file readable by group or others, naming its mode", () => {
    assert.throws(() => readTokenFile(tokenFile("loose", "s3cret", 0o644)), (e: unknown) => e instanceof InputError && /0644/.test(e.message) && /chmod 600/.test(e.message));
    assert.throws(() => readTokenFile(tokenFile("group", "s3cret", 0o640)), InputError);
  });

  it("refuses an empty token file and a missing one", () => {
    assert.throws(() => readTokenFile(tokenFile("empty", "\n", 0o600)), /empty/);
    assert.throws(() => readTokenFile(join(dir, "absent")), /cannot read/);
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
