// The executor command as a process against a stand-in mill, without a cluster: it dials (wss:// to a private mill with --mill-ca), drains on SIGTERM and exits at once when nothing runs.
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { REPO_ROOT } from "../support/run-cli.js";
import { StandInMill } from "../support/stand-in-mill.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const TOKEN = "process-token-of-the-mill";
const noOpenssl =
  spawnSync("openssl", ["version"], { stdio: "ignore" }).status === 0
    ? false
    : "openssl is not available to make a certificate";

/** A self-signed certificate for 127.0.0.1 (a private mill's), its key, and the PEM file a --mill-ca would name. */
function makeSelfSigned(dir: string, name: string): { cert: Buffer; key: Buffer; certFile: string } {
  const certFile = join(dir, `${name}.pem`);
  const keyFile = join(dir, `${name}.key`);
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "1",
      "-subj",
      `/CN=${name}`,
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      keyFile,
      "-out",
      certFile,
    ],
    { stdio: "ignore" },
  );
  return { cert: readFileSync(certFile), key: readFileSync(keyFile), certFile };
}

interface ExecutorChild {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
}

/** How long a spawned executor may take to start and dial: a busy machine has taken over 20 s; one that never dials misses any bound. */
const START_MS = 60_000;

describe("executor process", () => {
  const dir = makeTestTempDir("executor-process-");
  const tokenFile = join(dir, "token");
  writeFileSync(tokenFile, `${TOKEN}\n`);
  chmodSync(tokenFile, 0o600);
  const kubeconfig = join(dir, "kubeconfig");
  writeFileSync(
    kubeconfig,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}}]",
      "users: [{name: u, user: {token: t}}]",
      "contexts: [{name: x, context: {cluster: c, user: u, namespace: ci}}]",
      "current-context: x",
      "",
    ].join("\n"),
  );
  let mill: StandInMill | undefined;
  let started = 0;
  const children: ChildProcess[] = [];
  const mills: StandInMill[] = [];
  after(async () => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
    await mill?.close();
    for (const other of mills) await other.close();
  });

  const spawnExecutor = (millUrl: string, extra: readonly string[]): ExecutorChild => {
    const child = spawn(
      process.execPath,
      [
        join(REPO_ROOT, "bin", "knotless-runner-k8s.js"),
        "executor",
        "--mill",
        millUrl,
        ...extra,
        "--token-file",
        tokenFile,
        "--state-dir",
        join(dir, `state-${++started}`),
        "--log-store",
        join(dir, "logs"),
        "--kubeconfig",
        kubeconfig,
        "--drain-timeout",
        "10m",
      ],
      { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, KNOTLESS_MILL_TIMINGS: '{"backoffMaxMs":500}' } },
    );
    let output = "";
    child.stdout!.setEncoding("utf8").on("data", (text: string) => (output += text));
    child.stderr!.setEncoding("utf8").on("data", (text: string) => (output += text));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    children.push(child);
    return { child, output: () => output, exited };
  };

  it("exits 0 promptly on SIGTERM when nothing runs, not after --drain-timeout", async () => {
    mill = await StandInMill.start({ token: TOKEN });
    const child = spawn(
      process.execPath,
      [
        join(REPO_ROOT, "bin", "knotless-runner-k8s.js"),
        "executor",
        "--mill",
        mill.url,
        "--insecure-mill",
        "--token-file",
        tokenFile,
        "--state-dir",
        join(dir, "state"),
        "--log-store",
        join(dir, "logs"),
        "--kubeconfig",
        kubeconfig,
        "--drain-timeout",
        "10m",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    children.push(child); // killed by after() when an assertion fails first: a live child would hold the test run open
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (text: string) => (output += text));
    child.stderr.setEncoding("utf8").on("data", (text: string) => (output += text));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    await mill.waitFor(
      () => mill!.connected && mill!.messages("nodeSnapshot").length > 0,
      START_MS,
      "the executor's session",
    );
    const sent = Date.now();
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    const code = await exited;
    clearTimeout(timer);
    assert.equal(code, 0, output);
    // 20 s: what a busy machine cannot add to a prompt exit; one that waited on its leases would be killed at 60 s.
    assert.ok(Date.now() - sent < 20_000, `exited ${Date.now() - sent} ms after SIGTERM`);
    assert.match(output, /stopped: every lease's terminal is queued/);
  });

  it(
    "dials a private mill's wss:// trusting only --mill-ca: without it, or with another CA, the self-signed certificate is refused and no Hello is sent",
    { skip: noOpenssl },
    async () => {
      const { cert, key, certFile } = makeSelfSigned(dir, "private-mill");
      const tlsMill = await StandInMill.start({ token: TOKEN, tls: { cert, key } });
      mills.push(tlsMill);
      assert.match(tlsMill.url, /^wss:\/\/127\.0\.0\.1:\d+\/mill$/);
      const other = makeSelfSigned(dir, "another-ca");
      for (const extra of [[], ["--mill-ca", other.certFile]]) {
        const refused = spawnExecutor(tlsMill.url, extra);
        await waitForOutput(refused, /mill session ended: self[- ]signed certificate/, START_MS);
        refused.child.kill("SIGKILL");
        await refused.exited;
      }
      assert.equal(tlsMill.messages("hello").length, 0);
      const trusted = spawnExecutor(tlsMill.url, ["--mill-ca", certFile]);
      await tlsMill.waitFor(
        () => tlsMill.connected && tlsMill.messages("nodeSnapshot").length > 0,
        START_MS,
        "the session over TLS",
      );
      assert.equal(tlsMill.messages("hello").length, 1);
      trusted.child.kill("SIGTERM");
      assert.equal(await trusted.exited, 0, trusted.output());
      assert.doesNotMatch(trusted.output(), /mill session ended/);
    },
  );
});

/** Resolves once the process has printed a match of `pattern`; rejects after `timeoutMs` with what it printed. */
async function waitForOutput(process: ExecutorChild, pattern: RegExp, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(process.output())) {
    if (Date.now() > deadline)
      throw new Error(`no ${pattern} within ${timeoutMs} ms; the executor said:\n${process.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
