// The executor command as a process against a stand-in mill, without a cluster: it dials, drains on SIGTERM and exits at once when nothing runs.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { REPO_ROOT } from "../support/run-cli.js";
import { StandInMill } from "../support/stand-in-mill.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const TOKEN = "process-token-of-the-mill";

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
  after(async () => mill?.close());

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
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (text: string) => (output += text));
    child.stderr.setEncoding("utf8").on("data", (text: string) => (output += text));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    await mill.waitFor(
      () => mill!.connected && mill!.messages("nodeSnapshot").length > 0,
      20_000,
      "the executor's session",
    );
    const sent = Date.now();
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    const code = await exited;
    clearTimeout(timer);
    assert.equal(code, 0, output);
    assert.ok(Date.now() - sent < 10_000, `exited ${Date.now() - sent} ms after SIGTERM`);
    assert.match(output, /stopped: every lease's terminal is queued/);
  });
});
