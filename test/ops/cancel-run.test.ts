import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { requestRunCancel } from "../../src/ops/cancel-run.js";
import { ScriptedKubectl } from "../support/scripted-kubectl.js";
import { NOW, sampleJob } from "./job-samples.js";

const NOT_FOUND = { exitCode: 1, stderr: 'Error from server (NotFound): jobs.batch "knotless-run-r1" not found\n' };
const options = { runId: "r1", requester: { host: "ops", pid: 77 }, staleAfterMs: 120_000, now: () => new Date(NOW) };

function annotationsPatched(kubectl: ScriptedKubectl): Record<string, string> {
  const args = kubectl.callsTo("patch job")[0]!.args;
  return (JSON.parse(args[args.indexOf("-p") + 1]!) as { metadata: { annotations: Record<string, string> } }).metadata
    .annotations;
}

describe("requestRunCancel", () => {
  it("sets cancel-requested and cancel-requested-by on the run's Job when it is running", async () => {
    const kubectl = new ScriptedKubectl();
    kubectl
      .on("get job", { stdout: JSON.stringify(sampleJob({ heartbeatSecondsAgo: 3, owner: "4242@ci-1" })) })
      .on("patch job", {});
    const outcome = await requestRunCancel(kubectl.cluster(), { namespace: "ci" }, options);
    assert.equal(outcome.kind, "requested");
    assert.equal(
      outcome.message,
      "cancel requested for run r1 (Job ci/knotless-run-r1): its runner 4242@ci-1 stops the step, collects the outputs and deletes the Job",
    );
    assert.equal(outcome.warning, undefined);
    assert.deepEqual(annotationsPatched(kubectl), {
      "knotless.dev/cancel-requested": "2026-06-01T12:00:00.000Z",
      "knotless.dev/cancel-requested-by": "77@ops",
    });
    assert.deepEqual(kubectl.callsTo("patch job")[0]!.command.slice(0, 3), ["patch", "job", "knotless-run-r1"]);
  });

  it("says so and changes nothing when there is no such run, or it is over, or being deleted", async () => {
    for (const [reply, kind] of [
      [NOT_FOUND, "not-found"],
      [{ stdout: JSON.stringify(sampleJob({ complete: true })) }, "finished"],
      [{ stdout: JSON.stringify(sampleJob({ failedReason: "DeadlineExceeded" })) }, "finished"],
      [{ stdout: JSON.stringify(sampleJob({ deleting: true })) }, "deleting"],
      [{ stdout: JSON.stringify(sampleJob({ ours: false })) }, "not-a-run"],
      [{ stdout: JSON.stringify(sampleJob({ warm: {} })) }, "not-a-run"],
    ] as const) {
      const kubectl = new ScriptedKubectl();
      kubectl.on("get job", reply);
      const outcome = await requestRunCancel(kubectl.cluster(), { namespace: "ci" }, options);
      assert.equal(outcome.kind, kind);
      assert.equal(kubectl.callsTo("patch").length, 0, kind);
    }
  });

  it("tells a run that ended between the read and the patch", async () => {
    const kubectl = new ScriptedKubectl();
    kubectl.on("get job", { stdout: JSON.stringify(sampleJob({ heartbeatSecondsAgo: 3 })) }).on("patch job", NOT_FOUND);
    assert.equal((await requestRunCancel(kubectl.cluster(), { namespace: "ci" }, options)).kind, "finished");
  });

  it("warns when the run's heartbeat is stale: its runner may never see the request", async () => {
    const kubectl = new ScriptedKubectl();
    kubectl.on("get job", { stdout: JSON.stringify(sampleJob({ heartbeatSecondsAgo: 600 })) }).on("patch job", {});
    assert.match(
      (await requestRunCancel(kubectl.cluster(), { namespace: "ci" }, options)).warning ?? "",
      /heartbeat is 10m00s old: its runner may be gone/,
    );
  });

  it("fails naming the credential when the API server does not accept it, and the permission when it refuses", async () => {
    const unauthorized = new ScriptedKubectl();
    unauthorized.on("get job", { exitCode: 1, stderr: "error: You must be logged in to the server (Unauthorized)\n" });
    await assert.rejects(
      requestRunCancel(unauthorized.cluster(), { namespace: "ci" }, options),
      (error: Error & { reason?: string }) =>
        error.reason === "unauthorized" && /unknown, expired or revoked/.test(error.message),
    );
    const forbidden = new ScriptedKubectl();
    forbidden.on("get job", { stdout: JSON.stringify(sampleJob({ heartbeatSecondsAgo: 3 })) }).on("patch job", {
      exitCode: 1,
      stderr:
        'Error from server (Forbidden): jobs.batch "knotless-run-r1" is forbidden: User "x" cannot patch resource "jobs"\n',
    });
    await assert.rejects(
      requestRunCancel(forbidden.cluster(), { namespace: "ci" }, options),
      (error: Error & { reason?: string }) =>
        error.reason === "forbidden" && /requesting the cancel of run r1: .*lacks this permission/.test(error.message),
    );
  });

  it("fails as the infrastructure when the cluster cannot be reached", async () => {
    const kubectl = new ScriptedKubectl();
    kubectl.on("get job", { exitCode: 1, stderr: "The connection to the server 127.0.0.1:1 was refused\n" });
    await assert.rejects(
      requestRunCancel(kubectl.cluster(), { namespace: "ci" }, options),
      (error: Error & { reason?: string }) => error.reason === "cluster-unreachable",
    );
  });
});
