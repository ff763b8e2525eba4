// A closed port through either transport: a down API server is an infrastructure failure with a clear message.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { it } from "node:test";
import { findKubectlOnPath, makeWorkspace, readResult, runCli } from "../support/run-cli.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const kubectl = findKubectlOnPath();
/** The create's and the delete's retries, short: the test is about the failure, not about waiting out the default backoff. */
const SHORT_RETRIES = JSON.stringify({
  createRetry: { budgetMs: 60_000, maxAttempts: 5, initialDelayMs: 10, maxDelayMs: 40 },
  deleteRetry: { budgetMs: 30_000, maxAttempts: 4, initialDelayMs: 10, maxDelayMs: 40 },
});

for (const transport of ["api", "kubectl"] as const) {
  const skip = transport === "kubectl" && !kubectl ? "no kubectl on PATH" : false;
  it(`exits 3 with the connection error when the API server is down (--transport ${transport})`, { skip }, async () => {
    const dir = makeTestTempDir("unreachable-");
    const kubeconfig = join(dir, "kubeconfig");
    writeFileSync(
      kubeconfig,
      "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
    );
    const ws = makeWorkspace("a\ttrue\n");
    const run = await runCli(
      [
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
        transport,
        ...(kubectl ? ["--kubectl", kubectl] : []),
      ],
      { env: { KNOTLESS_EXECUTOR_TIMINGS: SHORT_RETRIES } },
    );
    assert.equal(run.code, 3, run.stderr);
    const result = readResult(ws.out);
    assert.equal(result.errorReason, "cluster-unreachable");
    assert.match(result.error ?? "", /refused/);
    assert.match(run.stderr, /run failed .*could not create Job/);
  });
}
