// The executor's lifecycle with variables and secrets: refused before any call, secrets after the upload, gone from a kept pod.
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import { InputError } from "../../src/core/errors.js";
import type { RunEventInput } from "../../src/events/run-events.js";
import type { ExecutorContext, RunSettings } from "../../src/executor/kubernetes/context.js";
import { KubernetesExecutor } from "../../src/executor/kubernetes/kubernetes-executor.js";
import { scanUploadTrees } from "../../src/transfer/scan-tree.js";
import { exampleSettings } from "../support/example-settings.js";
import { ScriptedKubectl, type RecordedCall } from "../support/scripted-kubectl.js";
import { makeTestTempDir } from "../support/temp-dir.js";
import { podList, runningPod } from "./kubernetes/cluster-objects.js";
import { SECRETS, assertNoSecretIn, honestSecretsPod } from "./kubernetes/secrets-fixtures.js";
import { UNIT_TIMINGS } from "./kubernetes/test-context.js";
import { honestPod } from "./kubernetes/upload-pod.js";

/** The helper subcommand an exec ran (`secrets`, `run`, ...), or "upload" for the upload's `sh -c`. */
function execKind(call: RecordedCall): string {
  const at = call.command.indexOf("/knotless/helper.sh");
  return at < 0 ? "upload" : call.command[at + 1]!;
}

describe("KubernetesExecutor with variables and secrets", () => {
  let checkout = "";
  before(async () => {
    checkout = join(makeTestTempDir("knotless-executor-env-"), "checkout");
    await mkdir(checkout);
    await writeFile(join(checkout, "README"), "readme\n");
  });

  function buildExecutor(settings: Partial<RunSettings>): {
    executor: KubernetesExecutor;
    kubectl: ScriptedKubectl;
    events: RunEventInput[];
  } {
    const kubectl = new ScriptedKubectl();
    kubectl.on("create", (call) => {
      const job = JSON.parse(call.stdin ?? "") as IJob;
      return { stdout: JSON.stringify({ ...job, metadata: { ...job.metadata, namespace: "ci" } }) };
    });
    kubectl.on("get pods", podList(runningPod()));
    kubectl.on("exec", honestSecretsPod, (call) => execKind(call) === "secrets");
    kubectl.on("exec", {}, (call) => execKind(call) === "forget-secrets");
    kubectl.on("exec", honestPod({}));
    kubectl.on("delete job", {});
    kubectl.on("patch job", {}); // the heartbeat, and the kept mark
    kubectl.on("get job", { hang: true }); // the cancel watch, until teardown stops it
    const events: RunEventInput[] = [];
    const controller = new AbortController();
    const ctx: ExecutorContext = {
      settings: { ...exampleSettings({ steps: ["build"] }), checkoutDir: checkout, ...settings },
      timings: UNIT_TIMINGS,
      get cluster() {
        return kubectl.cluster(this.settings.target);
      },
      emit: (event) => events.push(event),
      signal: controller.signal,
      requestCancel: (reason) => controller.abort(reason),
      cleanupSignal: () => new AbortController().signal,
    };
    return { executor: new KubernetesExecutor(ctx), kubectl, events };
  }

  it("refuses variables the steps cannot carry as bad input, before any kubectl call", async () => {
    const { executor, kubectl } = buildExecutor({ env: [{ name: "A", value: "x\0y" }] });
    await assert.rejects(
      executor.setup(),
      (error: unknown) => error instanceof InputError && /NUL/.test(error.message),
    );
    assert.equal(kubectl.calls.length, 0);
    await executor.teardown();
  });

  it("sends the secrets in their own exec right after the upload, and no argv, manifest or event holds a value", async (t) => {
    const { executor, kubectl, events } = buildExecutor({
      secrets: SECRETS,
      env: [
        { name: "CI", value: "true" },
        { name: "PASSWORD", value: "public" },
      ],
    });
    t.after(() => executor.teardown());
    await executor.setup();
    await executor.copyIn(scanUploadTrees(checkout, undefined));
    assert.deepEqual(kubectl.callsTo("exec").map(execKind), ["upload", "secrets"]);
    const secretsCall = kubectl.callsTo("exec")[1]!;
    assert.ok(secretsCall.stdin!.includes("export PASSWORD='hunter2-é'"), "the values are on stdin");
    assertNoSecretIn(
      kubectl.calls.flatMap((call) => call.args),
      "an argv",
    );
    assertNoSecretIn([kubectl.callsTo("create")[0]!.stdin!], "the Job manifest");
    const job = JSON.parse(kubectl.callsTo("create")[0]!.stdin!) as IJob;
    assert.equal(job.spec?.template.spec?.containers[0]?.env, undefined, "no variable of the run is in the Job");
    assertNoSecretIn([JSON.stringify(events)], "the events");
    const phase = events.find(
      (e): e is Extract<RunEventInput, { kind: "phase-end" }> => e.kind === "phase-end" && e.phase === "secrets",
    );
    assert.match(
      phase?.detail ?? "",
      /^delivered 2 secrets \(API_TOKEN, PASSWORD\) to the pod's memory-backed volume over stdin, \d+ bytes; receipt and byte count verified in the pod$/,
    );
    const warnings = events.flatMap((e) => (e.kind === "notice" && e.level === "warning" ? [e.message] : []));
    assert.deepEqual(warnings, [
      "the run's environment sets PASSWORD, which is also a secret: every step sees the secret's value",
    ]);
  });

  it("makes no secrets exec for a run without secrets", async (t) => {
    const { executor, kubectl } = buildExecutor({});
    t.after(() => executor.teardown());
    await executor.setup();
    await executor.copyIn(scanUploadTrees(checkout, undefined));
    assert.deepEqual(kubectl.callsTo("exec").map(execKind), ["upload"]);
  });

  it("ends the upload phase with the bytes it sent, the archive copyIn reports (what serve's bytes-moved metric counts)", async (t) => {
    const { executor, events } = buildExecutor({});
    t.after(() => executor.teardown());
    await executor.setup();
    const summary = await executor.copyIn(scanUploadTrees(checkout, undefined));
    const end = events.find(
      (e): e is Extract<RunEventInput, { kind: "phase-end" }> => e.kind === "phase-end" && e.phase === "upload",
    );
    assert.ok(summary.archiveBytes > 0);
    assert.equal(end?.bytes, summary.archiveBytes);
  });

  it("removes the secrets from the pod of a Job it keeps, and says so", async () => {
    const { executor, kubectl } = buildExecutor({ secrets: SECRETS, keep: true });
    await executor.setup();
    await executor.copyIn(scanUploadTrees(checkout, undefined));
    const report = await executor.teardown();
    assert.deepEqual(kubectl.callsTo("exec").map(execKind), ["upload", "secrets", "forget-secrets"]);
    assert.match(
      report.detail,
      /^kept Job knotless-run-42 \(--keep\), its secrets removed from the pod; delete it with: /,
    );
    assert.equal(kubectl.callsTo("delete").length, 0);
  });
});
