// The adopter: takes the unfinished runs of instances whose Lease expired, each exactly once, and leaves everything else.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import { buildInstanceLease } from "../../src/manifests/instance-lease.js";
import { Adopter, type Adoption } from "../../src/serve/adopter.js";
import { buildOwnershipAnnotations } from "../../src/serve/run-ownership.js";
import { exampleSettings } from "../support/example-settings.js";
import { MemoryObjects } from "../support/memory-objects.js";

const NOW = Date.parse("2026-12-07T12:00:00.000Z");

function runJob(name: string, instance: string, options: { finished?: boolean; continuation?: boolean } = {}): IJob {
  const settings = { ...exampleSettings({ steps: ["a"] }), runId: name, jobName: name };
  const { annotations } = buildOwnershipAnnotations(instance, settings, { repo: null, workflow: "ci" });
  if (options.continuation === false) delete annotations["knotless.dev/continuation"];
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name,
      namespace: "ci",
      labels: { "app.kubernetes.io/managed-by": "knotless-runner-k8s" },
      annotations: { "knotless.dev/run-id": name, ...annotations },
    },
    ...(options.finished ? { status: { conditions: [{ type: "Complete", status: "True" }] } } : {}),
  } as IJob;
}

/** A Lease of `instance` last renewed `agoMs` before NOW, for 10 s. */
async function addLease(objects: MemoryObjects, instance: string, agoMs: number): Promise<void> {
  await objects.cluster.createLease(
    "ci",
    buildInstanceLease("ci", { instance, durationSeconds: 10, now: NOW - agoMs }),
  );
}

function makeAdopter(objects: MemoryObjects, instance: string, adopted: Adoption[], warnings: string[] = []): Adopter {
  return new Adopter({
    cluster: objects.cluster,
    namespace: "ci",
    instance,
    pollMs: 60_000,
    graceMs: 1_000,
    now: () => NOW,
    adopt: (adoption) => void adopted.push(adoption),
    warn: (message) => warnings.push(message),
  });
}

describe("Adopter", () => {
  it("claims and hands over the unfinished runs of an instance whose Lease expired, then deletes that Lease", async () => {
    const objects = new MemoryObjects();
    await addLease(objects, "a", 20_000); // expired 10 s ago
    await addLease(objects, "c", 2_000); // live
    objects.addJob(runJob("knotless-run-1", "a"));
    objects.addJob(runJob("knotless-run-2", "a"));
    objects.addJob(runJob("knotless-run-3", "a", { finished: true }));
    objects.addJob(runJob("knotless-run-4", "c"));
    objects.addJob(runJob("knotless-run-5", "b"));
    const adopted: Adoption[] = [];
    const scan = await makeAdopter(objects, "b", adopted).scan();
    assert.deepEqual([...scan.adopted].sort(), ["knotless-run-1", "knotless-run-2"]);
    assert.deepEqual(
      adopted.map((a) => [a.job.metadata?.name, a.from, a.continuation.plan.settings.jobName]),
      [
        ["knotless-run-1", "a", "knotless-run-1"],
        ["knotless-run-2", "a", "knotless-run-2"],
      ],
    );
    const owners = [...objects.jobs.values()].map((job) => job.metadata!.annotations!["knotless.dev/instance"]);
    assert.deepEqual(owners, ["b", "b", "a", "c", "b"]);
    assert.deepEqual([...objects.leases.keys()], ["knotless-instance-c"], "a's expired Lease is gone, c's kept");
  });

  it("waits the grace past a Lease's expiry before taking its runs, and never takes a live instance's", async () => {
    const objects = new MemoryObjects();
    await addLease(objects, "a", 10_500); // expired 0.5 s ago: within the 1 s grace
    objects.addJob(runJob("knotless-run-1", "a"));
    const adopted: Adoption[] = [];
    assert.deepEqual((await makeAdopter(objects, "b", adopted).scan()).adopted, []);
    assert.equal(objects.cluster.callsTo("claimJob").length, 0);
    assert.equal(objects.leases.size, 1);
  });

  it("takes the runs of an instance that has no Lease at all (it was deleted)", async () => {
    const objects = new MemoryObjects();
    objects.addJob(runJob("knotless-run-1", "a"));
    const adopted: Adoption[] = [];
    assert.deepEqual((await makeAdopter(objects, "b", adopted).scan()).adopted, ["knotless-run-1"]);
  });

  it("lets each run go to exactly one of two adopters looking at once", async () => {
    const objects = new MemoryObjects();
    await addLease(objects, "a", 60_000);
    for (let i = 1; i <= 5; i++) objects.addJob(runJob(`knotless-run-${i}`, "a"));
    const byB: Adoption[] = [];
    const byC: Adoption[] = [];
    await Promise.all([makeAdopter(objects, "b", byB).scan(), makeAdopter(objects, "c", byC).scan()]);
    const names = [...byB, ...byC].map((a) => a.job.metadata!.name!).sort();
    assert.deepEqual(
      names,
      [1, 2, 3, 4, 5].map((i) => `knotless-run-${i}`),
    );
    for (const adoption of byB)
      assert.equal(
        objects.jobs.get(adoption.job.metadata!.name!)!.metadata!.annotations!["knotless.dev/instance"],
        "b",
      );
    for (const adoption of byC)
      assert.equal(
        objects.jobs.get(adoption.job.metadata!.name!)!.metadata!.annotations!["knotless.dev/instance"],
        "c",
      );
  });

  it("tells once of a run it cannot adopt (no continuation) and keeps its instance's Lease", async () => {
    const objects = new MemoryObjects();
    await addLease(objects, "a", 60_000);
    objects.addJob(runJob("knotless-run-1", "a", { continuation: false }));
    const warnings: string[] = [];
    const adopter = makeAdopter(objects, "b", [], warnings);
    await adopter.scan();
    await adopter.scan();
    assert.equal(warnings.length, 1);
    assert.match(
      warnings[0]!,
      /knotless-run-1 of instance a, whose Lease expired, cannot be adopted: it carries no continuation/,
    );
    assert.equal(objects.cluster.callsTo("claimJob").length, 0);
    assert.equal(objects.leases.size, 1);
  });
});
