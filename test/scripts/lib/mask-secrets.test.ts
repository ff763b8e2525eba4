// scripts/lib/mask-secrets.mjs: which values of a credential file and a kubeconfig are masked, in which forms.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, it } from "node:test";
import { REPO_ROOT } from "../../support/run-cli.js";
import { makeTestTempDir } from "../../support/temp-dir.js";

interface MaskSecrets {
  collectCredentialSecrets(path: string): string[];
  collectKubeconfigSecrets(path: string): string[];
  maskText(text: string, secrets: readonly string[]): string;
  containsSecret(text: string, secrets: readonly string[]): boolean;
}
const lib = (await import(pathToFileURL(join(REPO_ROOT, "scripts", "lib", "mask-secrets.mjs")).href)) as MaskSecrets;

function writeTemp(name: string, text: string): string {
  const path = join(makeTestTempDir("mask-secrets-"), name);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

describe("mask-secrets", () => {
  it("takes each line of a key=value credential file, and the value after = or :, without quotes", () => {
    const path = writeTemp("credentials", '# a comment\nhandle = alice.test\npassword: "s3cret-value"\n\n');
    const secrets = lib.collectCredentialSecrets(path);
    assert.ok(secrets.includes("s3cret-value"));
    assert.ok(secrets.includes('password: "s3cret-value"'));
    assert.ok(secrets.includes("alice.test"));
    assert.ok(!secrets.some((s) => s.includes("comment")), "comments are not values");
  });

  it("takes every string of a JSON credential file", () => {
    const path = writeTemp(
      "credentials.json",
      JSON.stringify({ identifier: "alice.test", nested: { appPassword: "abcd-efgh-ijkl" } }),
    );
    assert.deepEqual(lib.collectCredentialSecrets(path).sort(), ["abcd-efgh-ijkl", "alice.test"]);
  });

  it("takes the tokens, keys and passwords of a YAML kubeconfig and not its names or server", () => {
    const path = writeTemp(
      "kubeconfig",
      "clusters:\n- cluster:\n    server: https://x.invalid\n  name: c\nusers:\n- name: u\n  user:\n    token: tok-123456\n    client-key-data: a2V5LWRhdGE=\n    password: 'pw-abcdef'\n",
    );
    assert.deepEqual(lib.collectKubeconfigSecrets(path).sort(), ["a2V5LWRhdGE=", "pw-abcdef", "tok-123456"]);
  });

  it("takes the same of a JSON kubeconfig, and nothing of a missing file", () => {
    const path = writeTemp(
      "kubeconfig.json",
      JSON.stringify({ kind: "Config", users: [{ name: "u", user: { token: "json-token-1" } }] }),
    );
    assert.deepEqual(lib.collectKubeconfigSecrets(path), ["json-token-1"]);
    assert.deepEqual(lib.collectKubeconfigSecrets(join(REPO_ROOT, "no-such-kubeconfig")), []);
  });

  it("masks a value as is and in base64, padded and not, longest first", () => {
    const secret = "hunter2-secret";
    const base64 = Buffer.from(secret).toString("base64");
    const text = `a ${secret} b ${base64} c ${base64.replace(/=+$/, "")} d ${secret}-suffix`;
    assert.equal(lib.maskText(text, [secret]), "a *** b *** c *** d ***-suffix");
    assert.equal(lib.containsSecret(text, [secret]), true);
    assert.equal(lib.containsSecret("nothing here", [secret]), false);
  });

  it("leaves values shorter than six characters alone, so that ordinary words survive", () => {
    assert.equal(lib.maskText("ok yes ok", ["ok", "yes"]), "ok yes ok");
  });
});
