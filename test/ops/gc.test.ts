import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatGcReport, planGc, runGc } from "../../src/ops/gc.js";
import { ScriptedKubectl } from "../support/scripted-kubectl.js";
import { NOW, sampleJob } from "./job-samples.js";

const JOBS = [
  sampleJob({ runId: "live", heartbeatSecondsAgo: 5, createdSecondsAgo: 86_400 }),
  sampleJob({ runId: "dead", heartbeatSecondsAgo: 600, owner: "11@gone" }),
  sampleJob({ runId: "done", complete: true, createdSecondsAgo: 700 }),
  sampleJob({ name: "knotless-warm-1", warm: { deadlineSeconds: 60 } }),
  sampleJob({ name: "theirs", ours: false, heartbeatSecondsAgo: 9999 }),
];
const LIST = { stdout: JSON.stringify({ apiVersion: "v1", kind: "List", items: JOBS }) };
const RETRY = { budgetMs: 100, maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 1 };
const options = (dryRun: boolean) => ({
  policy: { staleAfterMs: 120_000 },
  dryRun,
  deleteRetry: RETRY,
  now: () => NOW,
});

describe("gc", () => {
  it("decides to remove the abandoned, the finished and the expired, and to spare the live run, never touching another's Job", () => {
    assert.deepEqual(
      planGc(JOBS, NOW, { staleAfterMs: 120_000 }).map((d) => [d.job, d.action]),
      [
        ["knotless-run-live", "spare"],
        ["knotless-run-done", "remove"],
        ["knotless-run-dead", "remove"],
        ["knotless-warm-1", "remove"],
      ],
    );
  });

  it("never removes a run whose owning instance's Lease is live, even with a stale heartbeat; removes it once the Lease expired", () => {
    const stale = [sampleJob({ runId: "held", createdSecondsAgo: 3600, heartbeatSecondsAgo: 600, instance: "b" })];
    const live = new Map([["b", { instance: "b", live: true, expiresAt: NOW + 10_000 }]]);
    const expired = new Map([["b", { instance: "b", live: false, expiresAt: NOW - 10_000 }]]);
    const [spared] = planGc(stale, NOW, { staleAfterMs: 120_000 }, [], live);
    assert.equal(spared!.action, "spare");
    assert.match(spared!.reason, /its instance b holds a live Lease \(10\.0s left\): never stale while it does/);
    assert.equal(planGc(stale, NOW, { staleAfterMs: 120_000 }, [], expired)[0]!.action, "remove");
    assert.equal(
      planGc(stale, NOW, { staleAfterMs: 120_000 })[0]!.action,
      "remove",
      "Leases unread: the heartbeat decides",
    );
  });

  it("deletes each Job to remove with background propagation, after listing ours by label", async () => {
    const kubectl = new ScriptedKubectl();
    kubectl.on("get jobs", LIST).on("delete job", {});
    const report = await runGc(kubectl.cluster(), { namespace: "ci" }, options(false));
    assert.deepEqual(kubectl.callsTo("get jobs")[0]!.command.slice(0, 4), [
      "get",
      "jobs",
      "--selector",
      "app.kubernetes.io/managed-by=knotless-runner-k8s",
    ]);
    const deleted = kubectl.callsTo("delete job").map((call) => call.command[2]);
    assert.deepEqual(deleted, ["knotless-run-done", "knotless-run-dead", "knotless-warm-1"]);
    assert.ok(kubectl.callsTo("delete job").every((call) => call.args.includes("--cascade=background")));
    assert.deepEqual(
      report.outcomes.map((o) => o.result),
      ["spared", "removed", "removed", "removed"],
    );
  });

  it("deletes nothing with --dry-run", async () => {
    const kubectl = new ScriptedKubectl();
    kubectl.on("get jobs", LIST);
    const report = await runGc(kubectl.cluster(), { namespace: "ci" }, options(true));
    assert.equal(kubectl.callsTo("delete").length, 0);
    assert.match(
      formatGcReport(report),
      /^would remove {2}run dead \(Job knotless-run-dead\): heartbeat 10m00s ago, stale after 2m00s: its runner is gone, owner 11@gone$/m,
    );
  });

  it("prints what it removed and spared and why, and reports a delete that failed", async () => {
    const kubectl = new ScriptedKubectl();
    kubectl
      .on("get jobs", LIST)
      .on(
        "delete job",
        { exitCode: 1, stderr: 'Error from server (Forbidden): jobs.batch "knotless-run-dead" is forbidden\n' },
        (call) => call.command[2] === "knotless-run-dead",
      )
      .on("delete job", {});
    const text = formatGcReport(await runGc(kubectl.cluster(), { namespace: "ci" }, options(false)));
    assert.match(text, /^spared +run live \(Job knotless-run-live\): heartbeat 5\.0s ago: its runner is alive$/m);
    assert.match(text, /^removed +run done \(Job knotless-run-done\): finished: Complete 30\.0s ago$/m);
    assert.match(
      text,
      /^removed +warm placeholder knotless-warm-1: warm placeholder past its warm time \(9m00s ago\)$/m,
    );
    assert.match(
      text,
      /^FAILED to remove +run dead \(Job knotless-run-dead\): could not delete Job knotless-run-dead: .*Forbidden/m,
    );
    assert.match(text, /^gc in namespace ci: 2 removed, 1 spared, 1 failed$/m);
  });

  const budget = (name: string) => ({
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: { name, labels: { "app.kubernetes.io/managed-by": "knotless-runner-k8s" } },
    spec: { maxUnavailable: 0 },
  });
  const BUDGETS = {
    stdout: JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: [budget("knotless-run-live"), budget("knotless-run-dead"), budget("knotless-run-vanished")],
    }),
  };

  it("removes our PodDisruptionBudgets whose Job is gone, listed before the Jobs so a live run's budget is never taken for an orphan", async () => {
    const kubectl = new ScriptedKubectl();
    kubectl
      .on("get poddisruptionbudgets.policy", BUDGETS)
      .on("get jobs", LIST)
      .on("delete job", {})
      .on("delete poddisruptionbudget.policy", {
        stdout: 'poddisruptionbudget.policy "knotless-run-vanished" deleted\n',
      });
    const report = await runGc(kubectl.cluster(), { namespace: "ci" }, options(false));
    const order = kubectl.calls.map((call) => call.command.slice(0, 2).join(" "));
    assert.ok(order.indexOf("get poddisruptionbudgets.policy") < order.indexOf("get jobs"), order.join(", "));
    assert.deepEqual(kubectl.callsTo("get poddisruptionbudgets.policy")[0]!.command.slice(2, 4), [
      "--selector",
      "app.kubernetes.io/managed-by=knotless-runner-k8s",
    ]);
    // The dead run's budget goes with its Job (owner reference): only the one without a Job is deleted here.
    assert.deepEqual(
      kubectl.callsTo("delete poddisruptionbudget.policy").map((call) => call.command[2]),
      ["knotless-run-vanished"],
    );
    assert.deepEqual(report.budgets, [{ budget: "knotless-run-vanished", result: "removed" }]);
    assert.match(
      formatGcReport(report),
      /^removed +PodDisruptionBudget knotless-run-vanished: its Job is gone \(orphaned\)$/m,
    );
  });

  it("names an orphaned budget it would remove with --dry-run, deleting nothing", async () => {
    const kubectl = new ScriptedKubectl();
    kubectl.on("get poddisruptionbudgets.policy", BUDGETS).on("get jobs", LIST);
    const report = await runGc(kubectl.cluster(), { namespace: "ci" }, options(true));
    assert.equal(kubectl.callsTo("delete").length, 0);
    assert.match(
      formatGcReport(report),
      /^would remove +PodDisruptionBudget knotless-run-vanished: its Job is gone \(orphaned\)$/m,
    );
  });

  it("goes on with the Jobs when the budgets cannot be listed, saying why", async () => {
    const kubectl = new ScriptedKubectl();
    kubectl
      .on("get poddisruptionbudgets.policy", {
        exitCode: 1,
        stderr:
          'Error from server (Forbidden): poddisruptionbudgets.policy is forbidden: User "ci" cannot list resource "poddisruptionbudgets" in API group "policy" in the namespace "ci"\n',
      })
      .on("get jobs", LIST)
      .on("delete job", {});
    const report = await runGc(kubectl.cluster(), { namespace: "ci" }, options(false));
    assert.equal(report.budgets, undefined);
    assert.deepEqual(
      report.outcomes.map((o) => o.result),
      ["spared", "removed", "removed", "removed"],
    );
    assert.match(
      formatGcReport(report),
      /^warning: listing the PodDisruptionBudgets: .*cannot list resource "poddisruptionbudgets".*; orphaned PodDisruptionBudgets were not looked for$/m,
    );
  });

  it("says why a finished run's pod ended when it removes it: the idle guard's stop in the runner's words", async () => {
    const stopped = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "knotless-run-idle-x",
        annotations: { "knotless.dev/pod-idle-timeout-seconds": "20" },
        ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: "knotless-run-idle", uid: "u" }],
      },
      status: {
        phase: "Failed",
        containerStatuses: [
          {
            name: "run",
            image: "i",
            imageID: "",
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: 75 } },
          },
        ],
      },
    };
    const kubectl = new ScriptedKubectl();
    kubectl
      .on("get jobs", {
        stdout: JSON.stringify({
          apiVersion: "v1",
          kind: "List",
          items: [sampleJob({ runId: "idle", failedReason: "BackoffLimitExceeded" })],
        }),
      })
      .on("get pods", { stdout: JSON.stringify({ apiVersion: "v1", kind: "List", items: [stopped] }) });
    const text = formatGcReport(await runGc(kubectl.cluster(), { namespace: "ci" }, options(true)));
    assert.match(
      text,
      /^would remove +run idle \(Job knotless-run-idle\): finished: Failed \(BackoffLimitExceeded\) 30\.0s ago; its pod ended: RunnerIdle: the pod stopped itself after 20\.0s without runner activity/m,
    );
  });

  it("fails with the reason when the Jobs cannot be listed", async () => {
    const kubectl = new ScriptedKubectl();
    kubectl.on("get jobs", {
      exitCode: 1,
      stderr: "The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?\n",
    });
    await assert.rejects(
      runGc(kubectl.cluster(), { namespace: "ci" }, options(false)),
      (error: Error & { reason?: string }) =>
        error.reason === "cluster-unreachable" && /listing the Jobs/.test(error.message),
    );
  });
});
