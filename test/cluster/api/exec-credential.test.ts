// Tests exec credential plugins (tiny shell fixtures) and the tokenFile source: caching, expiry, single-flight, failures.
import assert from "node:assert/strict";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { UnauthorizedError } from "../../../src/cluster/errors.js";
import { ExecCredentialSource } from "../../../src/cluster/api/exec-credential.js";
import type { ExecPluginConfig } from "../../../src/cluster/api/kubeconfig.js";
import { TokenFileSource } from "../../../src/cluster/api/token-file.js";
import { makeTestTempDir } from "../../support/temp-dir.js";

const dir = makeTestTempDir("knotless-exec-credential-");
let count = 0;
const V1 = "client.authentication.k8s.io/v1";
const ENV = { PATH: "/usr/bin:/bin" };

/** A plugin script: counts its runs in a file beside it, then runs `body` (sh). */
function plugin(body: string): { config: ExecPluginConfig; runs: () => number } {
  const name = `plugin-${++count}`;
  const path = join(dir, `${name}.sh`);
  const counter = join(dir, `${name}.runs`);
  writeFileSync(counter, "");
  writeFileSync(path, `#!/bin/sh\necho x >> ${counter}\n${body}\n`);
  chmodSync(path, 0o755);
  return {
    config: {
      apiVersion: V1,
      command: path,
      args: ["one", "two"],
      env: [{ name: "FROM_KUBECONFIG", value: "yes" }],
      provideClusterInfo: true,
    },
    runs: () => readFileSync(counter, "utf8").split("\n").filter(Boolean).length,
  };
}

function credential(status: object, apiVersion = V1): string {
  return `cat <<'EOF'\n${JSON.stringify({ apiVersion, kind: "ExecCredential", status })}\nEOF`;
}

async function assertUnauthorized(promise: Promise<unknown>, message: RegExp): Promise<UnauthorizedError> {
  let caught: UnauthorizedError | undefined;
  await assert.rejects(promise, (error) => {
    assert.ok(error instanceof UnauthorizedError, `not an UnauthorizedError: ${String(error)}`);
    assert.match(error.message, message);
    caught = error;
    return true;
  });
  return caught!;
}

describe("exec credential plugins", () => {
  it("passes args, the kubeconfig's env and KUBERNETES_EXEC_INFO, and reads the token", async () => {
    const seen = join(dir, "seen.json");
    const p = plugin(
      `printf '%s|%s|%s|%s' "$1" "$2" "$FROM_KUBECONFIG" "$KUBERNETES_EXEC_INFO" > ${seen}\n${credential({ token: "tok-1" })}`,
    );
    const source = new ExecCredentialSource(p.config, {
      env: ENV,
      cluster: { server: "https://api:6443", certificateAuthorityData: "Q0E=" },
    });
    assert.deepEqual(await source.get(), { token: "tok-1" });
    const [a, b, fromKubeconfig, info] = readFileSync(seen, "utf8").split("|");
    assert.deepEqual([a, b, fromKubeconfig], ["one", "two", "yes"]);
    assert.deepEqual(JSON.parse(info!), {
      apiVersion: V1,
      kind: "ExecCredential",
      spec: { interactive: false, cluster: { server: "https://api:6443", "certificate-authority-data": "Q0E=" } },
    });
  });

  it("caches a credential without expiry until it is invalidated, then runs the plugin again", async () => {
    const p = plugin(credential({ token: "tok" }));
    const source = new ExecCredentialSource(p.config, { env: ENV });
    const first = await source.get();
    await source.get();
    assert.equal(p.runs(), 1);
    source.invalidate(first);
    await source.get();
    assert.equal(p.runs(), 2);
  });

  it("runs the plugin again once the credential expires within the margin", async () => {
    let now = Date.parse("2026-12-04T12:00:00Z");
    const p = plugin(credential({ token: "tok", expirationTimestamp: "2026-12-04T12:05:00Z" }));
    const source = new ExecCredentialSource(p.config, { env: ENV, refreshMarginMs: 60_000, now: () => now });
    assert.equal((await source.get()).expiresAt, Date.parse("2026-12-04T12:05:00Z"));
    now += 3 * 60_000; // 2 minutes left: still good
    await source.get();
    assert.equal(p.runs(), 1);
    now += 90_000; // 30 s left, inside the 60 s margin
    await source.get();
    assert.equal(p.runs(), 2);
  });

  it("runs one plugin process for concurrent requests", async () => {
    const p = plugin(`sleep 0.3\n${credential({ token: "tok" })}`);
    const source = new ExecCredentialSource(p.config, { env: ENV });
    const all = await Promise.all(Array.from({ length: 8 }, () => source.get()));
    assert.equal(p.runs(), 1);
    assert.ok(all.every((c) => c === all[0]));
  });

  it("reads a client certificate from a v1beta1 plugin", async () => {
    const p = plugin(
      credential({ clientCertificateData: "CERT", clientKeyData: "KEY" }, "client.authentication.k8s.io/v1beta1"),
    );
    const source = new ExecCredentialSource(
      { ...p.config, apiVersion: "client.authentication.k8s.io/v1beta1" },
      { env: ENV },
    );
    assert.deepEqual(await source.get(), { clientCertificateData: "CERT", clientKeyData: "KEY" });
  });

  it("fails naming the plugin and its last stderr line when it exits non-zero, never quoting its stdout", async () => {
    const p = plugin(`echo 'secret-on-stdout'\necho 'first' >&2\necho 'login expired, run sso login' >&2\nexit 4`);
    const error = await assertUnauthorized(
      new ExecCredentialSource(p.config, { env: ENV }).get(),
      /plugin-\d+\.sh exited 4: login expired, run sso login/,
    );
    assert.doesNotMatch(error.message, /secret-on-stdout/);
  });

  it("fails on garbage, a wrong apiVersion, a missing token, and a bad expirationTimestamp", async () => {
    await assertUnauthorized(
      new ExecCredentialSource(plugin("echo 'token: hunter2'").config, { env: ENV }).get(),
      /not JSON/,
    );
    await assertUnauthorized(
      new ExecCredentialSource(plugin(credential({ token: "t" }, "client.authentication.k8s.io/v1beta1")).config, {
        env: ENV,
      }).get(),
      /answered apiVersion .*v1beta1, not the .*v1/,
    );
    await assertUnauthorized(
      new ExecCredentialSource(plugin(credential({})).config, { env: ENV }).get(),
      /neither a token nor a client certificate/,
    );
    await assertUnauthorized(
      new ExecCredentialSource(plugin(credential({ token: "t", expirationTimestamp: "tomorrow" })).config, {
        env: ENV,
      }).get(),
      /expirationTimestamp that is not a time/,
    );
  });

  it("kills a plugin that hangs and fails after the timeout; a later call runs it again", async () => {
    // exec: the kill reaches the hanging process itself, so no orphaned sleep holds the file open after the test.
    const p = plugin("exec sleep 5");
    const source = new ExecCredentialSource(p.config, { env: ENV, timeoutMs: 200 });
    await assertUnauthorized(source.get(), /did not answer within 200 ms/);
    await assertUnauthorized(source.get(), /did not answer/);
    assert.equal(p.runs(), 2);
  });

  it("names the install hint when the plugin is not installed", async () => {
    const config: ExecPluginConfig = {
      apiVersion: V1,
      command: "knotless-no-such-plugin",
      args: [],
      env: [],
      provideClusterInfo: false,
      installHint: "install it with: apt install foo",
    };
    await assertUnauthorized(
      new ExecCredentialSource(config, { env: ENV }).get(),
      /could not be started: ENOENT; install it with: apt install foo/,
    );
  });
});

describe("tokenFile", () => {
  it("re-reads the file once the period has passed, and keeps the last good token when the file is gone", async () => {
    const path = join(dir, "token");
    writeFileSync(path, "first\n");
    let now = 0;
    const source = new TokenFileSource(path, 60_000, () => now);
    assert.equal(await source.get(), "first");
    writeFileSync(path, "second\n");
    now = 30_000;
    assert.equal(await source.get(), "first");
    now = 61_000;
    assert.equal(await source.get(), "second");
    writeFileSync(path, "");
    now = 200_000;
    assert.equal(await source.get(), "second");
  });

  it("fails unauthorized when the file cannot be read at first", async () => {
    await assertUnauthorized(
      new TokenFileSource(join(dir, "no-token")).get(),
      /cannot read the kubeconfig's tokenFile .*ENOENT/,
    );
  });
});
