// Tests of deleting the run's Job: background propagation, already gone is fine, bounded retries, never throws.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { deleteJob } from "../../../src/executor/kubernetes/teardown.js";
import { INTERNAL_ERROR, UNREACHABLE, failure } from "./cluster-objects.js";
import { ScriptedKubectl } from "../../support/scripted-kubectl.js";
import { ScriptedCluster } from "../../support/scripted-cluster.js";
import { ForbiddenError, TimeoutError, UnavailableError } from "../../../src/cluster/errors.js";
import { UNIT_TIMINGS } from "./test-context.js";

const TARGET = { kubeconfig: "/tmp/kubeconfig", context: "ctx", namespace: "ci" };
const JOB = "knotless-run-42";

describe("deleteJob", { concurrency: true }, () => {
  it("deletes the Job with background propagation, without waiting for its pods", async () => {
    const kubectl = new ScriptedKubectl().on("delete job", { stdout: 'job.batch "knotless-run-42" deleted\n' });
    assert.deepEqual(await deleteJob(kubectl.cluster(TARGET), TARGET.namespace, JOB, UNIT_TIMINGS.deleteRetry), {
      deleted: true,
      detail: "deleted Job knotless-run-42",
    });
    assert.equal(kubectl.calls.length, 1);
    assert.deepEqual(kubectl.calls[0]?.args, [
      "--kubeconfig",
      "/tmp/kubeconfig",
      "--context",
      "ctx",
      "--namespace",
      "ci",
      "delete",
      "job",
      JOB,
      "--cascade=background",
      "--ignore-not-found",
      "--wait=false",
      "--request-timeout",
      "30s",
    ]);
  });

  it("counts a Job that is already gone as deleted", async () => {
    const kubectl = new ScriptedKubectl().on(
      "delete job",
      failure(`Error from server (NotFound): jobs.batch "${JOB}" not found`),
    );
    assert.deepEqual(await deleteJob(kubectl.cluster(TARGET), TARGET.namespace, JOB, UNIT_TIMINGS.deleteRetry), {
      deleted: true,
      detail: "Job knotless-run-42 was already gone",
    });
    assert.equal(kubectl.calls.length, 1);
  });

  it("retries a transient API failure, then deletes", async () => {
    const kubectl = new ScriptedKubectl().on("delete job", [failure(INTERNAL_ERROR), {}]);
    assert.deepEqual(await deleteJob(kubectl.cluster(TARGET), TARGET.namespace, JOB, UNIT_TIMINGS.deleteRetry), {
      deleted: true,
      detail: "deleted Job knotless-run-42",
    });
    assert.equal(kubectl.calls.length, 2);
    assert.deepEqual(kubectl.calls[1]?.args, kubectl.calls[0]?.args);
  });

  it("reports instead of throwing when the cluster stays unreachable, after a bounded number of tries", async () => {
    const kubectl = new ScriptedKubectl().on("delete job", failure(UNREACHABLE));
    const result = await deleteJob(kubectl.cluster(TARGET), TARGET.namespace, JOB, UNIT_TIMINGS.deleteRetry);
    assert.equal(result.deleted, false);
    assert.match(result.detail, /^could not delete Job knotless-run-42: Unable to connect to the server/);
    assert.equal(kubectl.calls.length, 4);
  });

  it("reports a refused delete at once, without retrying, as forbidden", async () => {
    const kubectl = new ScriptedKubectl().on(
      "delete job",
      failure(
        'Error from server (Forbidden): jobs.batch "knotless-run-42" is forbidden: User "ci" cannot delete resource "jobs"',
      ),
    );
    const result = await deleteJob(kubectl.cluster(TARGET), TARGET.namespace, JOB, UNIT_TIMINGS.deleteRetry);
    assert.deepEqual(result, {
      deleted: false,
      detail:
        'could not delete Job knotless-run-42: Error from server (Forbidden): jobs.batch "knotless-run-42" is forbidden: User "ci" cannot delete resource "jobs"',
      reason: "forbidden",
    });
    assert.equal(kubectl.calls.length, 1);
  });

  it("reports a delete with a credential the server no longer accepts as unauthorized, without retrying", async () => {
    const kubectl = new ScriptedKubectl().on(
      "delete job",
      failure("error: You must be logged in to the server (Unauthorized)"),
    );
    const result = await deleteJob(kubectl.cluster(TARGET), TARGET.namespace, JOB, UNIT_TIMINGS.deleteRetry);
    assert.equal(result.reason, "unauthorized");
    assert.equal(kubectl.calls.length, 1);
  });

  it("reports instead of throwing when kubectl cannot be run at all", async () => {
    const kubectl = new ScriptedKubectl().on("delete job", { spawnError: "ENOENT" });
    const result = await deleteJob(kubectl.cluster(TARGET), TARGET.namespace, JOB, UNIT_TIMINGS.deleteRetry);
    assert.equal(result.deleted, false);
    assert.match(result.detail, /^could not delete Job knotless-run-42: cannot run kubectl at "kubectl": ENOENT/);
  });

  it("leaves the namespace to kubectl when the target pins none", async () => {
    const kubectl = new ScriptedKubectl().on("delete job", {});
    await deleteJob(kubectl.cluster({}), undefined, JOB, UNIT_TIMINGS.deleteRetry);
    assert.deepEqual(kubectl.calls[0]?.command.slice(0, 3), ["delete", "job", JOB]);
    assert.ok(!kubectl.calls[0]?.args.includes("--namespace"));
  });
});

describe("deleteJob on any transport", { concurrency: true }, () => {
  it("counts a Job the transport found absent as already gone, after retrying a timeout and an unavailable server", async () => {
    const cluster = new ScriptedCluster().on(
      "deleteJob",
      new TimeoutError("no answer in 30s"),
      new UnavailableError("server", "etcd is slow"),
      "absent",
    );
    assert.deepEqual(await deleteJob(cluster, "ci", JOB, UNIT_TIMINGS.deleteRetry), {
      deleted: true,
      detail: "Job knotless-run-42 was already gone",
    });
    assert.deepEqual(
      cluster.callsTo("deleteJob").map((call) => call.args.slice(0, 2)),
      [
        ["ci", JOB],
        ["ci", JOB],
        ["ci", JOB],
      ],
    );
  });

  it("gives up at once on a refusal and says it was one", async () => {
    const cluster = new ScriptedCluster().on(
      "deleteJob",
      new ForbiddenError("jobs.batch is forbidden", "delete", "jobs.batch"),
    );
    assert.deepEqual(await deleteJob(cluster, "ci", JOB, UNIT_TIMINGS.deleteRetry), {
      deleted: false,
      detail: "could not delete Job knotless-run-42: jobs.batch is forbidden",
      reason: "forbidden",
    });
    assert.equal(cluster.calls.length, 1);
  });
});
