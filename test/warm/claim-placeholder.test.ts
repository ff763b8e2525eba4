import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CancelledError } from "../../src/core/errors.js";
import { claimPlaceholder } from "../../src/warm/claim-placeholder.js";
import { ScriptedKubectl } from "../support/scripted-kubectl.js";
import { jobList, placeholderJob, STARTED_AT } from "./placeholder-jobs.js";

const request = { cpu: "500m", memory: "512Mi" };
const target = { namespace: "ci" };
const now = () => STARTED_AT + 30_000;
const conflict = {
  exitCode: 1,
  stderr:
    'Error from server (Conflict): Operation cannot be fulfilled on jobs.batch "knotless-warm-0": Precondition failed: ResourceVersion in precondition: 10, ResourceVersion in object meta: 11\n',
};
const notFound = (name: string) => ({
  exitCode: 1,
  stderr: `Error from server (NotFound): jobs.batch "${name}" not found\n`,
});

function claim(kubectl: ScriptedKubectl, signal?: AbortSignal) {
  return claimPlaceholder({ cluster: kubectl.cluster(target), target, now, ...(signal ? { signal } : {}) }, request);
}

describe("claiming a warm placeholder", () => {
  it("deletes the best one with preconditions on its uid and resourceVersion, and is warm when that delete succeeds", async () => {
    const kubectl = new ScriptedKubectl()
      .on("get jobs", { stdout: jobList(placeholderJob({ uid: "u-1", resourceVersion: "17" })) })
      .on("delete --raw", { stdout: "{}" });
    const outcome = await claim(kubectl);
    assert.equal(outcome.capacity, "warm");
    assert.match(outcome.detail, /^claimed placeholder ci\/knotless-warm-0 \(it held a node, 1m30s left\)$/);
    const [, del] = kubectl.calls;
    assert.deepEqual(del!.command, [
      "delete",
      "--raw",
      "/apis/batch/v1/namespaces/ci/jobs/knotless-warm-0",
      "-f",
      "-",
      "--request-timeout",
      "30s",
    ]);
    assert.deepEqual(JSON.parse(del!.stdin!), {
      kind: "DeleteOptions",
      apiVersion: "v1",
      propagationPolicy: "Background",
      preconditions: { uid: "u-1", resourceVersion: "17" },
    });
  });

  it("is cold without a delete when no live placeholder covers the run's requests", async () => {
    const kubectl = new ScriptedKubectl().on("get jobs", {
      stdout: jobList(placeholderJob({ cpu: "250m" }), placeholderJob({ name: "knotless-warm-1", ended: "Failed" })),
    });
    const outcome = await claim(kubectl);
    assert.deepEqual(outcome, {
      capacity: "cold",
      detail: "no warm placeholder covers 500m cpu and 512Mi memory (knotless-warm-0: 250m, 512Mi)",
    });
    assert.deepEqual(
      kubectl.calls.map((c) => c.command[0]),
      ["get"],
    );
  });

  it("tries the next one when another run's delete won (NotFound), and says so when none is left", async () => {
    const list = jobList(placeholderJob({ name: "knotless-warm-0" }), placeholderJob({ name: "knotless-warm-1" }));
    const kubectl = new ScriptedKubectl()
      .on("get jobs", { stdout: list })
      .on("delete --raw", [notFound("knotless-warm-0"), { stdout: "{}" }]);
    const outcome = await claim(kubectl);
    assert.equal(outcome.capacity, "warm");
    assert.equal(outcome.capacity === "warm" && outcome.placeholder.name, "knotless-warm-1");
    const lost = await claim(
      new ScriptedKubectl().on("get jobs", { stdout: list }).on("delete --raw", notFound("knotless-warm-x")),
    );
    assert.deepEqual(lost.capacity, "cold");
    assert.match(
      lost.detail,
      /^the warm placeholders were taken first: knotless-warm-0 \(another run claimed it, or it ended\), knotless-warm-1/,
    );
  });

  it("reads the placeholder again on Conflict and claims it at its new resourceVersion while it is still one that fits", async () => {
    const kubectl = new ScriptedKubectl()
      .on("get jobs", { stdout: jobList(placeholderJob({ resourceVersion: "10" })) })
      .on("get job", { stdout: JSON.stringify(placeholderJob({ resourceVersion: "11" })) })
      .on("delete --raw", [conflict, { stdout: "{}" }]);
    assert.equal((await claim(kubectl)).capacity, "warm");
    const deletes = kubectl.callsTo("delete");
    assert.deepEqual(
      deletes.map((c) => JSON.parse(c.stdin!).preconditions.resourceVersion),
      ["10", "11"],
    );
    assert.deepEqual(kubectl.callsTo("get job")[0]!.args.slice(0, 4), ["--namespace", "ci", "get", "job"]);
  });

  it("gives a placeholder up when it changed into one that is being deleted (another run's claim)", async () => {
    const kubectl = new ScriptedKubectl()
      .on("get jobs", { stdout: jobList(placeholderJob()) })
      .on("get job", { stdout: JSON.stringify(placeholderJob({ deleting: true, resourceVersion: "11" })) })
      .on("delete --raw", conflict);
    const outcome = await claim(kubectl);
    assert.equal(outcome.capacity, "cold");
    assert.match(outcome.detail, /changed into one this run cannot use/);
    assert.equal(kubectl.callsTo("delete").length, 1);
  });

  it("is cold, never failing the run, when the list or the delete is refused", async () => {
    const refused = {
      exitCode: 1,
      stderr: 'Error from server (Forbidden): jobs.batch is forbidden: User "ci" cannot list resource "jobs"\n',
    };
    const noList = await claim(new ScriptedKubectl().on("get jobs", refused));
    assert.equal(noList.capacity, "cold");
    assert.match(noList.detail, /^could not look for warm placeholders: Error from server \(Forbidden\)/);
    const noDelete = await claim(
      new ScriptedKubectl().on("get jobs", { stdout: jobList(placeholderJob()) }).on("delete --raw", refused),
    );
    assert.match(noDelete.detail, /^could not claim placeholder ci\/knotless-warm-0: Error from server \(Forbidden\)/);
    assert.equal((await claim(new ScriptedKubectl().on("get jobs", { stdout: "not json" }))).capacity, "cold");
  });

  it("stops with CancelledError when the run is cancelled during the lookup", async () => {
    const controller = new AbortController();
    const kubectl = new ScriptedKubectl().on("get jobs", { hang: true });
    const claiming = claim(kubectl, controller.signal);
    setTimeout(() => controller.abort(), 20);
    await assert.rejects(claiming, CancelledError);
    assert.deepEqual(kubectl.calls[0]!.killSignals, ["SIGTERM"]);
  });
});
