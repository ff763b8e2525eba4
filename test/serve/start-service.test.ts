import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { get } from "node:https";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { NSID } from "../../src/serve/lexicon-schemas.js";
import { startService, type StartedService } from "../../src/serve/start-service.js";
import { ScriptedExecutor } from "../support/scripted-executor.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const skip =
  spawnSync("openssl", ["version"], { stdio: "ignore" }).status === 0
    ? false
    : "openssl is not available to make a certificate";

/** GET over HTTPS trusting `ca`; resolves with the status and body. */
function getTls(url: string, ca: Buffer, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { ca, headers: { Authorization: `Bearer ${token}` } }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (text: string) => (body += text));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    }).on("error", reject);
  });
}

describe("serve over TLS", { skip }, () => {
  const dir = makeTestTempDir("serve-tls-");
  let started: StartedService;
  let cert: Buffer;
  before(async () => {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
    cert = readFileSync(join(dir, "cert.pem"));
    mkdirSync(join(dir, "state"));
    started = await startService(
      {
        listen: { host: "127.0.0.1", port: 0 },
        stateDir: join(dir, "state"),
        token: "tls-token",
        tls: { cert, key: readFileSync(join(dir, "key.pem")) },
        metricsWithoutToken: false,
        limits: { maxRuns: 1, maxQueued: 1, maxWorkflowBytes: 1000, maxSecrets: 1, maxSecretBytes: 10 },
        maxBodyBytes: 1000,
        keepRunsMs: 3_600_000,
        gcIntervalMs: 3_600_000,
        gcStaleAfterMs: 120_000,
        defaults: { target: {}, podTimeoutMs: 1000, maxOutputBytes: 1, maxLogBytes: 1 },
        transport: {
          setting: { target: { namespace: "ci" }, kubectlPath: "/nonexistent/kubectl", transport: "kubectl" },
          env: {},
        },
      },
      { warn: () => undefined, createExecutor: (ctx) => new ScriptedExecutor(ctx, {}) },
    );
  });
  after(async () => {
    await started?.stop(100, AbortSignal.abort());
  });

  it("says https in its URL and answers over TLS with the token, 401 without", async () => {
    assert.match(started.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const ok = await getTls(`${started.url}/xrpc/${NSID.listRuns}`, cert, "tls-token");
    assert.equal(ok.status, 200);
    assert.deepEqual(JSON.parse(ok.body), { runs: [] });
    assert.equal((await getTls(`${started.url}/xrpc/${NSID.listRuns}`, cert, "wrong")).status, 401);
  });
});

describe("serve's gc timer", () => {
  it("runs gc on its namespace every --gc-interval through the service's kubectl", async () => {
    const dir = makeTestTempDir("serve-gc-");
    const log = join(dir, "calls.log");
    const kubectl = join(dir, "kubectl");
    writeFileSync(kubectl, `#!/bin/sh\necho "$@" >> ${log}\necho '{"apiVersion":"v1","kind":"List","items":[]}'\n`);
    chmodSync(kubectl, 0o755);
    const started = await startService(
      {
        listen: { host: "127.0.0.1", port: 0 },
        stateDir: join(dir, "state"),
        token: "t",
        metricsWithoutToken: false,
        limits: { maxRuns: 1, maxQueued: 1, maxWorkflowBytes: 1000, maxSecrets: 1, maxSecretBytes: 10 },
        maxBodyBytes: 1000,
        keepRunsMs: 3_600_000,
        gcIntervalMs: 100,
        gcStaleAfterMs: 120_000,
        defaults: { target: { namespace: "ci" }, podTimeoutMs: 1000, maxOutputBytes: 1, maxLogBytes: 1 },
        transport: {
          setting: { target: { namespace: "ci" }, kubectlPath: kubectl, transport: "kubectl" },
          env: process.env,
        },
      },
      { warn: () => undefined },
    );
    try {
      for (
        let i = 0;
        i < 100 &&
        !(
          existsSync(log) &&
          readFileSync(log, "utf8")
            .split("\n")
            .filter((l) => l.includes("get jobs")).length >= 2
        );
        i++
      )
        await new Promise((r) => setTimeout(r, 50));
      const calls = readFileSync(log, "utf8").trim().split("\n");
      assert.ok(
        calls.filter((call) => /get jobs/.test(call) && /--namespace ci/.test(call)).length >= 2,
        calls.join("\n"),
      );
    } finally {
      await started.stop(100, AbortSignal.abort());
    }
  });
});

describe("serve's token file", () => {
  it("takes a rotated --token-file's new token without a restart", async () => {
    const dir = makeTestTempDir("serve-token-");
    const tokenFile = join(dir, "token");
    writeFileSync(tokenFile, "first-token-0123456789\n");
    chmodSync(tokenFile, 0o600);
    const started = await startService(
      {
        listen: { host: "127.0.0.1", port: 0 },
        stateDir: join(dir, "state"),
        token: "first-token-0123456789",
        tokenFile,
        metricsWithoutToken: false,
        limits: { maxRuns: 1, maxQueued: 1, maxWorkflowBytes: 1000, maxSecrets: 1, maxSecretBytes: 10 },
        maxBodyBytes: 1000,
        keepRunsMs: 3_600_000,
        gcIntervalMs: 3_600_000,
        gcStaleAfterMs: 120_000,
        defaults: { target: { namespace: "ci" }, podTimeoutMs: 1000, maxOutputBytes: 1, maxLogBytes: 1 },
        transport: {
          setting: { target: { namespace: "ci" }, kubectlPath: "/nonexistent/kubectl", transport: "kubectl" },
          env: {},
        },
      },
      { warn: () => undefined },
    );
    try {
      const list = (token: string): Promise<number> =>
        fetch(`${started.url}/xrpc/${NSID.listRuns}`, { headers: { Authorization: `Bearer ${token}` } }).then(
          (res) => res.status,
        );
      assert.equal(await list("first-token-0123456789"), 200);
      writeFileSync(tokenFile, "second-token-0123456789-rotated\n");
      assert.equal(await list("second-token-0123456789-rotated"), 200);
      assert.equal(await list("first-token-0123456789"), 401);
    } finally {
      await started.stop(100, AbortSignal.abort());
    }
  });
});
