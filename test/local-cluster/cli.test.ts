// The CLI starts a detached local cluster, reports it, changes its faults and stops it.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { listKubectlBinaries, runKubectl } from "./kubectl-runner.js";

const CLI = fileURLToPath(new URL("../../local-cluster/cli.js", import.meta.url));

function runCli(args: string[], stdin?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
    child.stdin.end(stdin ?? "");
  });
}

describe("local cluster CLI", () => {
  let dir = "";
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "local-cluster-cli-"));
  });
  after(async () => {
    await runCli(["down", "--dir", dir]);
    await rm(dir, { recursive: true, force: true });
  });

  test("up starts a background server, writes a kubeconfig kubectl can use, and says how to point at it", async () => {
    const r = await runCli(["up", "--dir", dir, "--port", "0", "--admin-port", "0", "--runtime", "none"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`export KUBECONFIG=${join(dir, "kubeconfig")}`));
    const kubectl = listKubectlBinaries().at(-1)!;
    const ns = await runKubectl(kubectl.path, join(dir, "kubeconfig"), ["get", "namespaces", "-o", "name"]);
    assert.equal(ns.code, 0, ns.stderr);
    assert.match(ns.stdout, /namespace\/default/);
    const again = await runCli(["up", "--dir", dir]);
    assert.match(again.stdout, /already running/);
  });

  test("faults replaces the faults from a file or stdin and shows them", async () => {
    const file = join(dir, "faults.json");
    await writeFile(file, JSON.stringify({ createError: { count: 1 } }));
    const set = await runCli(["faults", file, "--dir", dir]);
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(JSON.parse(set.stdout).faults, { createError: { count: 1 } });
    const bad = await runCli(["faults", "-", "--dir", dir], JSON.stringify({ nonsense: true }));
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /invalid fault configuration/);
    const cleared = await runCli(["faults", "--clear", "--dir", dir]);
    assert.deepEqual(JSON.parse(cleared.stdout).faults, {});
  });

  test("status reports a running cluster and down stops it", async () => {
    const state = JSON.parse(await readFile(join(dir, "state.json"), "utf8")) as { pid: number };
    const status = await runCli(["status", "--dir", dir]);
    assert.equal(status.code, 0);
    assert.match(status.stdout, new RegExp(`running \\(pid ${state.pid}\\)`));
    const down = await runCli(["down", "--dir", dir]);
    assert.equal(down.code, 0, down.stderr);
    assert.throws(() => process.kill(state.pid, 0), "the daemon is gone");
    const after = await runCli(["status", "--dir", dir]);
    assert.equal(after.code, 3);
    assert.match(after.stdout, /not running/);
  });
});
