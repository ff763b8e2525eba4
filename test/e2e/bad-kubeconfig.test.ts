// A kubeconfig either transport refuses is bad input: kubectl's refusal (a run leaves the kubeconfig to it), or the API transport's before any request.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { findKubectlOnPath, makeWorkspace, readResult, runCli } from "../support/run-cli.js";

const kubectl = findKubectlOnPath();

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function writeKubeconfig(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), "bad-kubeconfig-"));
  dirs.push(dir);
  const path = join(dir, "kubeconfig");
  writeFileSync(path, text);
  return path;
}

async function runWith(
  kubeconfig: string,
  extra: string[] = [],
): Promise<{ code: number | null; stderr: string; out: string }> {
  const ws = makeWorkspace("a\ttrue\n");
  const run = await runCli([
    "run",
    "--checkout",
    ws.checkout,
    "--steps",
    ws.stepsFile,
    "--out",
    ws.out,
    "--kubeconfig",
    kubeconfig,
    "--transport",
    "kubectl",
    "--kubectl",
    kubectl!,
    ...extra,
  ]);
  return { code: run.code, stderr: run.stderr, out: ws.out };
}

const INVALID_YAML = "apiVersion: v1\nkind: Config\ncontexts: [\n";
const ONE_CONTEXT =
  "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n";

describe("a kubeconfig the API transport refuses (the default)", () => {
  const runApi = async (kubeconfig: string, extra: string[] = []) => {
    const ws = makeWorkspace("a\ttrue\n");
    return {
      ...(await runCli([
        "run",
        "--checkout",
        ws.checkout,
        "--steps",
        ws.stepsFile,
        "--out",
        ws.out,
        "--kubeconfig",
        kubeconfig,
        ...extra,
      ])),
      out: ws.out,
    };
  };

  it("exits 2 with the file and line when the kubeconfig is not valid YAML, before any request", async () => {
    const kubeconfig = writeKubeconfig(INVALID_YAML);
    const run = await runApi(kubeconfig);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, new RegExp(`${kubeconfig}:4: the kubeconfig is not valid YAML`));
    assert.equal(
      existsSync(`${run.out}/result.json`),
      false,
      "bad input found before the run started writes no result",
    );
  });

  it("exits 2 when --context names no context of the kubeconfig", async () => {
    const run = await runApi(writeKubeconfig(ONE_CONTEXT), ["--context", "nope"]);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /the kubeconfig has no context named "nope"/);
  });
});

describe("a kubeconfig kubectl refuses", { skip: kubectl ? false : "no kubectl on PATH" }, () => {
  it("exits 2 with kubectl's file and line when the kubeconfig is not valid YAML", async () => {
    const kubeconfig = writeKubeconfig(INVALID_YAML);
    const run = await runWith(kubeconfig);
    assert.equal(run.code, 2, run.stderr);
    const result = readResult(run.out);
    assert.equal(result.errorReason, "input");
    assert.match(
      result.error ?? "",
      new RegExp(`kubectl cannot use the kubeconfig: error: error loading config file "${kubeconfig}": yaml: line 3`),
    );
  });

  it("exits 2 when --context names no context of the kubeconfig", async () => {
    const kubeconfig = writeKubeconfig(ONE_CONTEXT);
    const run = await runWith(kubeconfig, ["--context", "nope"]);
    assert.equal(run.code, 2, run.stderr);
    assert.match(readResult(run.out).error ?? "", /context "nope" does not exist/);
  });
});
