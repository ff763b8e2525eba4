import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InfraError, InputError } from "../../src/core/errors.js";
import { releasePlaceholders } from "../../src/warm/release.js";
import { topUpPlaceholders, type WarmSpec } from "../../src/warm/top-up.js";
import { ScriptedKubectl, type RecordedCall } from "../support/scripted-kubectl.js";
import { jobList, placeholderJob, STARTED_AT } from "./placeholder-jobs.js";

const spec: WarmSpec = { count: 1, maxWarm: 1, seconds: 600, cpu: "500m", memory: "512Mi", image: "busybox:1.36" };
const target = { namespace: "ci" };
const now = () => STARTED_AT + 60_000;
const createdName = (call: RecordedCall): string => JSON.parse(call.stdin!).metadata.name;
const alreadyExists = (name: string) => ({
  exitCode: 1,
  stderr: `Error from server (AlreadyExists): error when creating "STDIN": jobs.batch "${name}" already exists\n`,
});

function topUp(kubectl: ScriptedKubectl, overrides: Partial<WarmSpec> = {}) {
  return topUpPlaceholders({ cluster: kubectl.cluster(target), target, now }, { ...spec, ...overrides });
}

describe("topping up warm placeholders", () => {
  it("creates the missing ones in the lowest free slots, with the spec's size, image and duration", async () => {
    const kubectl = new ScriptedKubectl()
      .on("get jobs", { stdout: jobList(placeholderJob({ name: "knotless-warm-1" })) })
      .on("create", { stdout: "{}" });
    const bigger = await topUp(kubectl, { count: 3, maxWarm: 3, cpu: "1", memory: "1Gi" });
    assert.deepEqual(
      [bigger.created, bigger.present, bigger.short],
      [["knotless-warm-0", "knotless-warm-2"], [], 1],
      "the smaller one does not count, but takes a slot",
    );
    const again = await topUp(kubectl, { count: 3, maxWarm: 3 });
    assert.deepEqual(again.created, ["knotless-warm-0", "knotless-warm-2"]);
    assert.deepEqual(
      again.present.map((p) => p.name),
      ["knotless-warm-1"],
    );
    const manifest = JSON.parse(kubectl.callsTo("create")[3]!.stdin!);
    assert.equal(manifest.metadata.namespace, "ci");
    assert.equal(manifest.spec.activeDeadlineSeconds, 600);
    assert.deepEqual(manifest.spec.template.spec.containers[0].resources.requests, { cpu: "500m", memory: "512Mi" });
    assert.match(
      again.detail,
      /^3 of 3 warm placeholder\(s\): created knotless-warm-0, knotless-warm-2 \(500m cpu, 512Mi, for 10m00s\); already there: knotless-warm-1 \(1m00s left\)$/,
    );
  });

  it("does nothing the second time: it is idempotent", async () => {
    const kubectl = new ScriptedKubectl().on("get jobs", { stdout: jobList(placeholderJob()) });
    const report = await topUp(kubectl);
    assert.deepEqual([report.created, report.short], [[], 0]);
    assert.deepEqual(
      kubectl.calls.map((c) => c.command[0]),
      ["get"],
    );
  });

  it("never goes past --max-warm, counting placeholders of every size", async () => {
    const kubectl = new ScriptedKubectl().on("get jobs", { stdout: jobList(placeholderJob({ cpu: "250m" })) });
    const report = await topUp(kubectl);
    assert.deepEqual([report.created, report.short], [[], 1]);
    assert.match(report.detail, /1 not made: --max-warm 1 placeholder\(s\) are there already/);
  });

  it("counts a slot another caller filled at the same moment (AlreadyExists) and makes no second one", async () => {
    const kubectl = new ScriptedKubectl()
      .on("get jobs", { stdout: jobList() })
      .on("create", alreadyExists("knotless-warm-0"));
    const report = await topUp(kubectl);
    assert.deepEqual([report.created, report.raced, report.short], [[], ["knotless-warm-0"], 0]);
    assert.equal(kubectl.callsTo("create").length, 1);
  });

  it("clears a finished placeholder out of the slot it needs, only if it is still the one listed", async () => {
    const kubectl = new ScriptedKubectl()
      .on("get jobs", { stdout: jobList(placeholderJob({ ended: "Failed", uid: "old", resourceVersion: "5" })) })
      .on("delete --raw", { stdout: "{}" })
      .on("create", { stdout: "{}" });
    const report = await topUp(kubectl);
    assert.deepEqual(report.created, ["knotless-warm-0"]);
    assert.deepEqual(JSON.parse(kubectl.callsTo("delete")[0]!.stdin!).preconditions, {
      uid: "old",
      resourceVersion: "5",
    });
    assert.deepEqual(
      kubectl.calls.map((c) => c.command[0]),
      ["get", "delete", "create"],
    );
  });

  it("replaces the placeholder that would end sooner when asked for fresh ones and no slot is free", async () => {
    const short = placeholderJob({ seconds: 90, uid: "short" }); // 30 s left of 90
    const kubectl = new ScriptedKubectl()
      .on("get jobs", { stdout: jobList(short) })
      .on("delete --raw", { stdout: "{}" })
      .on("create", { stdout: "{}" });
    const report = await topUp(kubectl, { seconds: 120, freshForMs: 60_000 });
    assert.deepEqual([report.created, report.replaced], [["knotless-warm-0"], ["knotless-warm-0"]]);
    assert.equal(createdName(kubectl.callsTo("create")[0]!), "knotless-warm-0");
    const lost = new ScriptedKubectl()
      .on("get jobs", { stdout: jobList(short) })
      .on("delete --raw", { exitCode: 1, stderr: "Error from server (NotFound): gone\n" });
    const after = await topUp(lost, { seconds: 120, freshForMs: 60_000 });
    assert.deepEqual([after.created, after.short], [[], 1], "a run claimed it meanwhile: nothing is made in its place");
  });

  it("throws InputError for a kubeconfig kubectl cannot use and InfraError when the cluster refuses", async () => {
    await assert.rejects(
      topUp(new ScriptedKubectl().on("get jobs", { exitCode: 1, stderr: 'error: context "nope" does not exist\n' })),
      InputError,
    );
    await assert.rejects(
      topUp(
        new ScriptedKubectl().on("get jobs", {
          exitCode: 1,
          stderr: "The connection to the server 127.0.0.1:1 was refused\n",
        }),
      ),
      (e: unknown) => e instanceof InfraError && e.reason === "cluster-unreachable",
    );
    const refusedCreate = new ScriptedKubectl()
      .on("get jobs", { stdout: jobList() })
      .on("create", { exitCode: 1, stderr: "Error from server (InternalError): etcdserver: request timed out\n" });
    await assert.rejects(
      topUp(refusedCreate),
      (e: unknown) =>
        e instanceof InfraError &&
        e.reason === "create-failed" &&
        /could not create placeholder knotless-warm-0/.test(e.message),
    );
  });
});

describe("releasing warm placeholders", () => {
  it("deletes every placeholder by the warm selector and names what kubectl deleted", async () => {
    const kubectl = new ScriptedKubectl().on("delete jobs", {
      stdout: 'job.batch "knotless-warm-0" deleted\njob.batch "knotless-warm-1" deleted\n',
    });
    const report = await releasePlaceholders({ cluster: kubectl.cluster(target), target });
    assert.deepEqual(report.deleted, ["knotless-warm-0", "knotless-warm-1"]);
    assert.deepEqual(kubectl.calls[0]!.command.slice(0, 4), [
      "delete",
      "jobs",
      "--selector",
      "app.kubernetes.io/managed-by=knotless-runner-k8s,knotless.dev/role=warm",
    ]);
    const none = await releasePlaceholders({
      cluster: new ScriptedKubectl().on("delete jobs", { stdout: "" }).cluster(target),
      target,
    });
    assert.equal(none.detail, "no warm placeholder to release");
  });
});
