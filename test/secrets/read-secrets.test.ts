// Tests reading secrets: dotenv files with file:line errors, --secret-env variables, merging and the file mode warning.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { InputError } from "../../src/core/errors.js";
import {
  checkSecretsFileMode,
  MAX_SECRETS_FILE_BYTES,
  mergeSecrets,
  parseSecretsFile,
  readSecretsFile,
  readSecretsFromEnv,
} from "../../src/secrets/read-secrets.js";
import { makeTestTempDir } from "../support/temp-dir.js";

/** Asserts that parsing fails with an InputError at `location` whose message matches and shows no secret value. */
function assertRefused(text: string, location: string, message: RegExp, values: readonly string[] = []): void {
  assert.throws(
    () => parseSecretsFile(text, "secrets.env"),
    (error: unknown) => {
      assert.ok(error instanceof InputError, String(error));
      assert.equal(error.location, location);
      assert.match(error.message, message);
      for (const value of values)
        assert.ok(!error.message.includes(value), `the message shows ${JSON.stringify(value)}: ${error.message}`);
      return true;
    },
  );
}

describe("parseSecretsFile", () => {
  it("reads plain, quoted, exported and commented entries the way dotenv does", () => {
    const text = [
      "# deploy secrets",
      "",
      "PLAIN=abc123",
      "export EXPORTED=exp-value",
      "SINGLE='single # not a comment'",
      'DOUBLE="double \\n two lines"',
      "BACKTICK=`tick`",
      "  SPACED = spaced value   # a comment",
      "_under_9=x",
    ].join("\n");
    assert.deepEqual(parseSecretsFile(text, "secrets.env"), [
      { name: "PLAIN", value: "abc123" },
      { name: "EXPORTED", value: "exp-value" },
      { name: "SINGLE", value: "single # not a comment" },
      { name: "DOUBLE", value: "double \n two lines" },
      { name: "BACKTICK", value: "tick" },
      { name: "SPACED", value: "spaced value" },
      { name: "_under_9", value: "x" },
    ]);
  });

  it("reads a multi-line double-quoted value and counts its lines for the entries after it", () => {
    const text = 'KEY="-----BEGIN KEY-----\r\nMIIEvQIBADANBg\r\n-----END KEY-----"\r\nNEXT=ok\r\nbad line\r\n';
    assert.deepEqual(parseSecretsFile(text.replace("bad line\r\n", ""), "secrets.env"), [
      { name: "KEY", value: "-----BEGIN KEY-----\nMIIEvQIBADANBg\n-----END KEY-----" },
      { name: "NEXT", value: "ok" },
    ]);
    assertRefused(text, "secrets.env:5", /expected NAME=value/, ["MIIEvQIBADANBg"]);
  });

  it("refuses a line that is not an entry, with its line number and without its text", () => {
    assertRefused("A=1\n\nthis is not an entry s3cr3t\n", "secrets.env:3", /not a secret entry/, ["s3cr3t"]);
    assertRefused("A=1\nKEY: colon-value\n", "secrets.env:2", /expected NAME=value/, ["colon-value"]);
  });

  it("refuses a bad name without repeating it", () => {
    assertRefused("OK=1\nMY-KEY=value\n", "secrets.env:2", /name must match/, ["MY-KEY", "value"]);
    assertRefused("9LIVES=cat\n", "secrets.env:1", /name must match/, ["cat"]);
    assertRefused("=nameless\n", "secrets.env:1", /name must match/, ["nameless"]);
  });

  it("refuses an empty value, which would mask everything", () => {
    assertRefused("A=1\nEMPTY=\n", "secrets.env:2", /EMPTY has an empty value/);
    assertRefused('EMPTY=""\n', "secrets.env:1", /empty value/);
    assertRefused("EMPTY=   # nothing\n", "secrets.env:1", /empty value/);
  });

  it("refuses a name given twice, naming the first line", () => {
    assertRefused("A=one-value\nB=2\nA=other-value\n", "secrets.env:3", /A is defined again \(first on line 1\)/, [
      "one-value",
      "other-value",
    ]);
  });

  it("refuses an unclosed quote, or text after the closing quote, at the entry's first line", () => {
    assertRefused('A=1\nKEY="unclosed-value\nB=2\n', "secrets.env:2", /no closing quote/, ["unclosed-value"]);
    assertRefused("KEY='q-val-77' trailing-text\n", "secrets.env:1", /no closing quote, or text after it/, [
      "q-val-77",
      "trailing-text",
    ]);
  });

  it('refuses a "#" inside an unquoted value, which dotenv would read as the start of a comment', () => {
    assertRefused("PASSWORD=p4ss#word\n", "secrets.env:1", /contains "#"/, ["p4ss", "word"]);
    assertRefused("PASSWORD=#hashfirst\n", "secrets.env:1", /contains "#"/, ["hashfirst"]);
    assert.deepEqual(parseSecretsFile('PASSWORD="p4ss#word"\n', "s.env"), [{ name: "PASSWORD", value: "p4ss#word" }]);
  });

  it("reads an empty file, or one of comments only, as no secrets", () => {
    assert.deepEqual(parseSecretsFile("", "s.env"), []);
    assert.deepEqual(parseSecretsFile("# nothing\n\n   \n", "s.env"), []);
  });
});

describe("readSecretsFromEnv", () => {
  const env = { TOKEN: "tok-value", OTHER: "other-value", EMPTY: "" };

  it("reads each named variable", () => {
    assert.deepEqual(readSecretsFromEnv(["TOKEN", "OTHER"], env), [
      { name: "TOKEN", value: "tok-value" },
      { name: "OTHER", value: "other-value" },
    ]);
  });

  it("refuses a variable that is not set or is empty", () => {
    assert.throws(
      () => readSecretsFromEnv(["MISSING"], env),
      (error: unknown) => error instanceof InputError && /MISSING is not set/.test(error.message),
    );
    assert.throws(
      () => readSecretsFromEnv(["EMPTY"], env),
      (error: unknown) => error instanceof InputError && /EMPTY is empty/.test(error.message),
    );
  });

  it("refuses a bad name without repeating it, since it may be a value pasted by mistake", () => {
    assert.throws(
      () => readSecretsFromEnv(["TOKEN", "ghp-pasted-value"], env),
      (error: unknown) =>
        error instanceof InputError && /number 2/.test(error.message) && !error.message.includes("ghp-pasted-value"),
    );
  });

  it("refuses a name given twice", () => {
    assert.throws(() => readSecretsFromEnv(["TOKEN", "TOKEN"], env), /TOKEN is given twice/);
  });
});

describe("mergeSecrets", () => {
  it("joins the sources in order and refuses a name two sources give", () => {
    const file = { from: "secrets.env", secrets: [{ name: "A", value: "1" }] };
    const flags = { from: "--secret-env", secrets: [{ name: "B", value: "2" }] };
    assert.deepEqual(mergeSecrets([file, flags]), [...file.secrets, ...flags.secrets]);
    assert.throws(
      () => mergeSecrets([file, { from: "--secret-env", secrets: [{ name: "A", value: "x" }] }]),
      /A is given by both secrets.env and --secret-env/,
    );
  });
});

describe("checkSecretsFileMode", () => {
  it("says nothing for a file only its owner can read", () => {
    assert.equal(checkSecretsFileMode(0o100600, "s.env"), undefined);
    assert.equal(checkSecretsFileMode(0o100400, "s.env"), undefined);
  });

  it("warns when the group or others can read the file", () => {
    assert.match(
      checkSecretsFileMode(0o100644, "s.env") ?? "",
      /s\.env is readable by its group and others \(mode 644\): chmod 600 s\.env/,
    );
    assert.match(checkSecretsFileMode(0o100640, "s.env") ?? "", /readable by its group \(mode 640\)/);
    assert.match(checkSecretsFileMode(0o100604, "s.env") ?? "", /readable by others \(mode 604\)/);
  });
});

describe("readSecretsFile", () => {
  const dir = makeTestTempDir("knotless-secrets-");

  it("reads a file and warns about its mode", async () => {
    const path = join(dir, "loose.env");
    writeFileSync(path, "TOKEN=abc\n");
    chmodSync(path, 0o644);
    const { secrets, warning } = await readSecretsFile(path);
    assert.deepEqual(secrets, [{ name: "TOKEN", value: "abc" }]);
    assert.match(warning ?? "", /readable by its group and others/);
    chmodSync(path, 0o600);
    assert.equal((await readSecretsFile(path)).warning, undefined);
  });

  it("refuses a file that cannot be read as bad input", async () => {
    await assert.rejects(
      readSecretsFile(join(dir, "missing.env")),
      (error: unknown) => error instanceof InputError && /no such file/.test(error.message),
    );
  });

  it("refuses a named pipe at once instead of waiting for a writer", { timeout: 5_000 }, async () => {
    const path = join(dir, "pipe.env");
    execFileSync("mkfifo", [path]);
    await assert.rejects(
      readSecretsFile(path),
      (error: unknown) =>
        error instanceof InputError && /named pipe/.test(error.message) && error.message.includes(path),
    );
  });

  it("refuses a device and a file past the bound without reading it whole", async () => {
    await assert.rejects(
      readSecretsFile("/dev/zero"),
      (error: unknown) => error instanceof InputError && /character device/.test(error.message),
    );
    const path = join(dir, "huge.env");
    writeFileSync(path, `A=${"x".repeat(MAX_SECRETS_FILE_BYTES)}\n`);
    await assert.rejects(
      readSecretsFile(path),
      (error: unknown) => error instanceof InputError && /more than the 1 MiB/.test(error.message),
    );
  });

  it("refuses bytes that are not UTF-8 at their line, never showing the value", async () => {
    const path = join(dir, "latin1.env");
    writeFileSync(path, Buffer.from("A=ok\nTOKEN=caf\xe9secret\n", "latin1"));
    await assert.rejects(
      readSecretsFile(path),
      (error: unknown) =>
        error instanceof InputError &&
        /not UTF-8/.test(error.message) &&
        /:2/.test(error.message) &&
        !error.message.includes("hunter2"),
    );
  });
});
