// Tests of the executor's last resort for a crashing runner: a synchronous delete of the Job it created, and only that.
import assert from "node:assert/strict";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { ExecutorContext, ExecutorSettings } from "../../src/executor/context.js";
import { KubernetesExecutor } from "../../src/executor/kubernetes-executor.js";
import { exampleSettings } from "../support/example-settings.js";
import { ScriptedKubectl } from "../support/scripted-kubectl.js";
import { makeTestTempDir } from "../support/temp-dir.js";
import { podList, runningPod } from "./cluster-objects.js";
import { UNIT_TIMINGS } from "./test-context.js";

const dir = makeTestTempDir("knotless-executor-");
let binaries = 0;

/** A kubectl binary for runSync that records its arguments in `<binary>.args` and exits with `code`. */
function writeRecordingKubectl(code: number): string {
  binaries += 1;
  const path = join(dir, `kubectl-${binaries}`);
  writeFileSync(path, `#!/bin/sh\nprintf '%s\\n' "$@" > "$0.args"\necho "refused by the test" >&2\nexit ${code}\n`);
  chmodSync(path, 0o755);
  return path;
}

/** An executor whose async calls go to a scripted kubectl that creates the Job and shows its pod Running. */
function buildExecutor(binary: string, settings: Partial<ExecutorSettings> = {}): { executor: KubernetesExecutor; kubectl: ScriptedKubectl } {
  const kubectl = new ScriptedKubectl({ binary });
  kubectl.on("create", (call) => {
    const job = JSON.parse(call.stdin ?? "") as IJob;
    return { stdout: JSON.stringify({ ...job, metadata: { ...job.metadata, namespace: "ci" } }) };
  });
  kubectl.on("get pods", podList(runningPod()));
  kubectl.on("delete job", {});
  const ctx: ExecutorContext = {
    settings: { ...exampleSettings({ steps: ["build"] }), ...settings },
    timings: UNIT_TIMINGS,
    kubectl: kubectl.kubectl,
    emit: () => {},
    signal: new AbortController().signal,
  };
  return { executor: new KubernetesExecutor(ctx), kubectl };
}

describe("KubernetesExecutor.teardownNowSync", () => {
  // Each test ends with teardown, which also removes the runner files setup staged on the host.
  it("deletes the Job this run created, synchronously and with background propagation", async () => {
    const binary = writeRecordingKubectl(0);
    const { executor } = buildExecutor(binary);
    await executor.setup();
    assert.equal(executor.teardownNowSync(5_000), "deleted Job knotless-run-42");
    const args = readFileSync(`${binary}.args`, "utf8").trim().split("\n");
    assert.deepEqual(args.slice(args.indexOf("delete")), ["delete", "job", "knotless-run-42", "--cascade=background", "--ignore-not-found", "--wait=false", "--request-timeout", "30s"]);
    assert.ok(args.includes("--namespace") && args[args.indexOf("--namespace") + 1] === "ci", args.join(" "));
    await executor.teardown();
  });

  it("says what failed and how to delete the Job by hand when kubectl refuses", async () => {
    const { executor } = buildExecutor(writeRecordingKubectl(1));
    await executor.setup();
    assert.match(executor.teardownNowSync(5_000), /^could not delete Job knotless-run-42: refused by the test; delete it with: kubectl .*delete job knotless-run-42 --cascade=background/);
    await executor.teardown();
  });

  it("spawns nothing when no Job was created", () => {
    const binary = writeRecordingKubectl(0);
    const { executor } = buildExecutor(binary);
    assert.equal(executor.teardownNowSync(5_000), "no Job of this run was created");
    assert.equal(existsSync(`${binary}.args`), false);
  });

  it("spawns nothing once teardown has deleted the Job", async () => {
    const binary = writeRecordingKubectl(0);
    const { executor, kubectl } = buildExecutor(binary);
    await executor.setup();
    assert.equal((await executor.teardown()).deleted, true);
    assert.equal(kubectl.callsTo("delete job").length, 1);
    assert.equal(executor.teardownNowSync(5_000), "Job knotless-run-42 was already deleted");
    assert.equal(existsSync(`${binary}.args`), false);
  });

  it("keeps a Job the run keeps, printing the command that deletes it", async () => {
    const binary = writeRecordingKubectl(0);
    const { executor } = buildExecutor(binary, { keep: true });
    await executor.setup();
    assert.match(executor.teardownNowSync(5_000), /^kept Job knotless-run-42 \(--keep\); delete it with: kubectl /);
    assert.equal(existsSync(`${binary}.args`), false);
    await executor.teardown();
  });
});
