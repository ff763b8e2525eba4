// The claim of a run: at the Job's resourceVersion, so of two claimers exactly one wins; never a run another instance owns or one that is over.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import { claimRun } from "../../src/serve/claim-run.js";
import { MemoryObjects } from "../support/memory-objects.js";

function runJob(name: string, instance: string, extra: Partial<IJob["metadata"]> = {}, status?: IJob["status"]): IJob {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name,
      namespace: "ci",
      labels: { "app.kubernetes.io/managed-by": "knotless-runner-k8s" },
      annotations: { "knotless.dev/run-id": name, "knotless.dev/instance": instance },
      ...extra,
    },
    ...(status ? { status } : {}),
  } as IJob;
}

describe("claimRun", () => {
  it("sets the adopter as the owner, and the instance it came from, with the resourceVersion it read", async () => {
    const objects = new MemoryObjects();
    const version = objects.addJob(runJob("knotless-run-1", "a")).metadata!.resourceVersion;
    const outcome = await claimRun(objects.cluster, "ci", "knotless-run-1", { instance: "b", from: "a" });
    assert.equal(outcome.kind, "claimed");
    const annotations = objects.jobs.get("knotless-run-1")!.metadata!.annotations!;
    assert.equal(annotations["knotless.dev/instance"], "b");
    assert.equal(annotations["knotless.dev/adopted-from"], "a");
    assert.deepEqual(objects.cluster.callsTo("claimJob")[0]!.args.slice(0, 3), ["ci", "knotless-run-1", version]);
  });

  it("lets exactly one of two claimers that read the same Job win; the other learns who owns it", async () => {
    const objects = new MemoryObjects();
    objects.addJob(runJob("knotless-run-1", "a"));
    const [b, c] = await Promise.all([
      claimRun(objects.cluster, "ci", "knotless-run-1", { instance: "b", from: "a" }),
      claimRun(objects.cluster, "ci", "knotless-run-1", { instance: "c", from: "a" }),
    ]);
    assert.equal(objects.cluster.callsTo("claimJob").length, 2, "both read the same version and both tried");
    const outcomes = [b, c].map((o) => o.kind).sort();
    assert.deepEqual(outcomes, ["claimed", "taken"]);
    const winner = b.kind === "claimed" ? "b" : "c";
    const loser = b.kind === "claimed" ? c : b;
    assert.deepEqual(loser, { kind: "taken", owner: winner });
    assert.equal(objects.jobs.get("knotless-run-1")!.metadata!.annotations!["knotless.dev/instance"], winner);
  });

  it("is refused by the precondition when the Job changed between the read and the claim, and then reads it again", async () => {
    const objects = new MemoryObjects();
    objects.addJob(runJob("knotless-run-1", "a"));
    const getJob = objects.cluster.getJob;
    let reads = 0;
    objects.cluster.getJob = async (...args) => {
      const job = await getJob(...args);
      // Another adopter claims it right after the first read: that read's resourceVersion is stale.
      if (++reads === 1)
        await objects.cluster.claimJob(
          "ci",
          "knotless-run-1",
          objects.jobs.get("knotless-run-1")!.metadata!.resourceVersion!,
          {
            "knotless.dev/instance": "c",
          },
        );
      return job;
    };
    const outcome = await claimRun(objects.cluster, "ci", "knotless-run-1", { instance: "b", from: "a" });
    assert.deepEqual(outcome, { kind: "taken", owner: "c" });
    assert.equal(reads, 2, "read again after the 409");
  });

  it("leaves a run another instance owns, a run that is over and a Job that is gone", async () => {
    const objects = new MemoryObjects();
    objects.addJob(runJob("knotless-run-1", "c"));
    objects.addJob(
      runJob("knotless-run-2", "a", {}, { conditions: [{ type: "Complete", status: "True" }] } as IJob["status"]),
    );
    objects.addJob(runJob("knotless-run-3", "a", { deletionTimestamp: "2026-12-07T00:00:00Z" } as never));
    const claim = { instance: "b", from: "a" };
    assert.deepEqual(await claimRun(objects.cluster, "ci", "knotless-run-1", claim), { kind: "taken", owner: "c" });
    assert.deepEqual(await claimRun(objects.cluster, "ci", "knotless-run-2", claim), { kind: "over", how: "Complete" });
    assert.deepEqual(await claimRun(objects.cluster, "ci", "knotless-run-3", claim), {
      kind: "over",
      how: "being deleted",
    });
    assert.deepEqual(await claimRun(objects.cluster, "ci", "knotless-run-9", claim), { kind: "gone" });
    assert.equal(objects.cluster.callsTo("claimJob").length, 0);
  });

  it("lets a restarted instance re-claim its own run without marking it adopted", async () => {
    const objects = new MemoryObjects();
    objects.addJob(runJob("knotless-run-1", "a"));
    const outcome = await claimRun(objects.cluster, "ci", "knotless-run-1", { instance: "a", from: "a" });
    assert.equal(outcome.kind, "claimed");
    assert.equal(objects.jobs.get("knotless-run-1")!.metadata!.annotations!["knotless.dev/adopted-from"], undefined);
  });
});
