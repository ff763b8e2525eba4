// Tests of the executor's last resort for a crashing runner: a synchronous delete of the Job it created, and only that.
import assert from "node:assert/strict";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { ExecutorContext, RunSettings } from "../../../src/executor/kubernetes/context.js";
import { KubernetesExecutor } from "../../../src/executor/kubernetes/kubernetes-executor.js";
import { exampleSettings } from "../../support/example-settings.js";
import { ScriptedKubectl, type ScriptedReply } from "../../support/scripted-kubectl.js";
import { makeTestTempDir } from "../../support/temp-dir.js";
import { failure, podList, runningPod } from "./cluster-objects.js";
import { UNIT_TIMINGS } from "./test-context.js";

// A space in the path: the delete command printed for the operator must quote the configured kubectl.
const dir = makeTestTempDir("knotless executor-");

/** The start of the delete command printed for `binary`: its path, single-quoted, then the global flags. */
function deleteHintFor(binary: string): string {
  return `delete it with: '${binary}' --kubeconfig /tmp/kubeconfig --context ctx --namespace ci delete job knotless-run-42 --cascade=background`;
}
let binaries = 0;

/** A kubectl binary for runSync that records its arguments in `<binary>.args` and exits with `code`. */
function writeRecordingKubectl(code: number): string {
  binaries += 1;
  const path = join(dir, `kubectl-${binaries}`);
  writeFileSync(path, `#!/bin/sh\nprintf '%s\\n' "$@" > "$0.args"\necho "refused by the test" >&2\nexit ${code}\n`);
  chmodSync(path, 0o755);
  return path;
}

/**
 * A kubectl binary for runSync that answers `get` with the Job JSON the test writes to `<binary>.job`, and records
 * the arguments of `delete` in `<binary>.args`.
 */
function writeJobReadingKubectl(): string {
  binaries += 1;
  const path = join(dir, `kubectl-${binaries}`);
  writeFileSync(
    path,
    `#!/bin/sh
for a in "$@"; do
  case $a in
    get) cat "$0.job"; exit 0 ;;
    delete) printf '%s\n' "$@" > "$0.args"; exit 0 ;;
  esac
done
exit 1
`,
  );
  chmodSync(path, 0o755);
  return path;
}

/** An executor whose async calls go to a scripted kubectl that creates the Job (or hangs) and shows its pod Running. */
function buildExecutor(
  binary: string,
  settings: Partial<RunSettings> = {},
  options: { createHangs?: boolean; deleteReply?: ScriptedReply } = {},
): { executor: KubernetesExecutor; kubectl: ScriptedKubectl; cancel: () => void } {
  const kubectl = new ScriptedKubectl({ binary });
  kubectl.on("create", (call) => {
    if (options.createHangs) return { hang: true };
    const job = JSON.parse(call.stdin ?? "") as IJob;
    return { stdout: JSON.stringify({ ...job, metadata: { ...job.metadata, namespace: "ci" } }) };
  });
  kubectl.on("get pods", podList(runningPod()));
  kubectl.on("delete job", options.deleteReply ?? {});
  const controller = new AbortController();
  const ctx: ExecutorContext = {
    settings: { ...exampleSettings({ steps: ["build"] }), ...settings },
    timings: UNIT_TIMINGS,
    get cluster() {
      return kubectl.cluster(this.settings.target);
    },
    emit: () => {},
    signal: controller.signal,
    requestCancel: (reason) => controller.abort(reason),
    cleanupSignal: () => new AbortController().signal,
  };
  return { executor: new KubernetesExecutor(ctx), kubectl, cancel: () => controller.abort() };
}

/** Starts setup with a create that never answers; resolves once the create is in flight (ownership unknown). */
async function startUnconfirmedCreate(
  binary: string,
): Promise<{ executor: KubernetesExecutor; token: string; finish: () => Promise<void> }> {
  const { executor, kubectl, cancel } = buildExecutor(binary, {}, { createHangs: true });
  const setup = executor.setup().catch(() => undefined);
  while (kubectl.callsTo("create")[0]?.stdin === undefined) await new Promise((resolve) => setImmediate(resolve));
  const job = JSON.parse(kubectl.callsTo("create")[0]!.stdin!) as IJob;
  const token = job.metadata?.annotations?.["knotless.dev/create-token"] ?? "";
  assert.match(token, /^[0-9a-f]{24}$/);
  return {
    executor,
    token,
    finish: async () => {
      cancel();
      await setup;
      await executor.teardown();
    },
  };
}

function jobJson(token: string): string {
  return JSON.stringify({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name: "knotless-run-42", namespace: "ci", annotations: { "knotless.dev/create-token": token } },
  });
}

describe("KubernetesExecutor.teardownNowSync", () => {
  // Each test ends with teardown, which also removes the runner files setup staged on the host.
  it("deletes the Job this run created, synchronously and with background propagation", async (t) => {
    const binary = writeRecordingKubectl(0);
    const { executor } = buildExecutor(binary);
    t.after(() => executor.teardown()); // removes the staged files even when an assertion fails
    await executor.setup();
    assert.deepEqual(executor.teardownNowSync(5_000), { detail: "deleted Job knotless-run-42", mayBeLeft: false });
    const args = readFileSync(`${binary}.args`, "utf8").trim().split("\n");
    assert.deepEqual(args.slice(args.indexOf("delete")), [
      "delete",
      "job",
      "knotless-run-42",
      "--cascade=background",
      "--ignore-not-found",
      "--wait=false",
      "--request-timeout",
      "30s",
    ]);
    assert.ok(args.includes("--namespace") && args[args.indexOf("--namespace") + 1] === "ci", args.join(" "));
  });

  it("says what failed and how to delete the Job by hand when kubectl refuses", async (t) => {
    const binary = writeRecordingKubectl(1);
    const { executor } = buildExecutor(binary);
    t.after(() => executor.teardown()); // removes the staged files even when an assertion fails
    await executor.setup();
    const report = executor.teardownNowSync(5_000);
    assert.ok(
      report.detail.startsWith(`could not delete Job knotless-run-42: refused by the test; ${deleteHintFor(binary)}`),
      report.detail,
    );
    assert.equal(report.mayBeLeft, true);
  });

  it("spawns nothing when no Job was created", () => {
    const binary = writeRecordingKubectl(0);
    const { executor } = buildExecutor(binary);
    assert.deepEqual(executor.teardownNowSync(5_000), { detail: "no Job of this run was created", mayBeLeft: false });
    assert.equal(existsSync(`${binary}.args`), false);
  });

  it("spawns nothing once teardown has deleted the Job", async (t) => {
    const binary = writeRecordingKubectl(0);
    const { executor, kubectl } = buildExecutor(binary);
    t.after(() => executor.teardown()); // removes the staged files even when an assertion fails
    await executor.setup();
    assert.equal((await executor.teardown()).deleted, true);
    assert.equal(kubectl.callsTo("delete job").length, 1);
    assert.deepEqual(executor.teardownNowSync(5_000), {
      detail: "Job knotless-run-42 was already deleted",
      mayBeLeft: false,
    });
    assert.equal(existsSync(`${binary}.args`), false);
  });

  it("deletes a Job whose create was not confirmed once it reads this run's create token on it", async (t) => {
    const binary = writeJobReadingKubectl();
    const { executor, token, finish } = await startUnconfirmedCreate(binary);
    t.after(finish); // even when an assertion fails: it ends setup and removes the staged files
    writeFileSync(`${binary}.job`, jobJson(token));
    assert.deepEqual(executor.teardownNowSync(5_000), { detail: "deleted Job knotless-run-42", mayBeLeft: false });
    assert.match(readFileSync(`${binary}.args`, "utf8"), /^delete\njob\nknotless-run-42\n--cascade=background\n/m);
  });

  it("leaves alone a same-named Job that carries another run's create token", async (t) => {
    const binary = writeJobReadingKubectl();
    const { executor, finish } = await startUnconfirmedCreate(binary);
    t.after(finish);
    writeFileSync(`${binary}.job`, jobJson("another-runs-token"));
    const report = executor.teardownNowSync(5_000);
    assert.ok(
      report.detail.startsWith(
        `the Job's create was not confirmed and no Job of this run was found; if Job knotless-run-42 exists, ${deleteHintFor(binary)}`,
      ),
      report.detail,
    );
    assert.equal(report.mayBeLeft, true);
    assert.equal(existsSync(`${binary}.args`), false);
  });

  it("keeps a Job the run keeps, printing the command that deletes it", async (t) => {
    const binary = writeRecordingKubectl(0);
    const { executor } = buildExecutor(binary, { keep: true });
    t.after(() => executor.teardown()); // removes the staged files even when an assertion fails
    await executor.setup();
    const report = executor.teardownNowSync(5_000);
    assert.ok(report.detail.startsWith(`kept Job knotless-run-42 (--keep); ${deleteHintFor(binary)}`), report.detail);
    assert.equal(report.mayBeLeft, false);
    assert.equal(existsSync(`${binary}.args`), false);
  });
});

describe("KubernetesExecutor.teardown", () => {
  const REFUSED = (verb: string): string =>
    `Error from server (Forbidden): jobs.batch "knotless-run-42" is forbidden: User "system:serviceaccount:ci:r" cannot ${verb} resource "jobs" in API group "batch" in the namespace "ci"`;

  it("names the Job and the command that deletes it, with the reason forbidden, when the delete is refused", async () => {
    const { executor } = buildExecutor("kubectl", {}, { deleteReply: failure(REFUSED("delete")) });
    await executor.setup();
    const report = await executor.teardown();
    assert.equal(report.deleted, false);
    assert.equal(report.leftBehind, true);
    assert.equal(report.reason, "forbidden");
    assert.match(
      report.detail,
      /^could not delete Job knotless-run-42: Error from server \(Forbidden\).*cannot delete resource "jobs".*; delete it with: kubectl --kubeconfig \/tmp\/kubeconfig --context ctx --namespace ci delete job knotless-run-42 --cascade=background/,
    );
  });

  it("does not pass over a Job an unconfirmed create may have made when reading it back is refused", async () => {
    const { executor, kubectl, cancel } = buildExecutor("kubectl", {}, { createHangs: true });
    kubectl.on("get job", failure(REFUSED("get")));
    const setup = executor.setup().catch(() => undefined);
    while (kubectl.callsTo("create")[0]?.stdin === undefined) await new Promise((resolve) => setImmediate(resolve));
    cancel();
    await setup;
    const report = await executor.teardown();
    assert.equal(report.leftBehind, true);
    assert.equal(report.reason, "forbidden");
    assert.match(
      report.detail,
      /^could not tell whether the unfinished create made Job knotless-run-42: Error from server \(Forbidden\).*cannot get resource "jobs".*; delete it with: kubectl .* delete job knotless-run-42/,
    );
    assert.equal(kubectl.callsTo("delete job").length, 0);
  });
});
