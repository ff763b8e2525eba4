import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { IPod } from "kubernetes-models/v1/Pod";
import { buildListRows, formatListJson, formatListTable } from "../../src/ops/list-runs.js";
import { NOW, ago, sampleJob } from "./job-samples.js";

function pod(job: string, phase: string, node: string): IPod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `${job}-x1`,
      creationTimestamp: ago(500),
      ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: job, uid: "u" }],
    },
    spec: { containers: [], nodeName: node },
    status: { phase },
  } as IPod;
}

describe("buildListRows", () => {
  const jobs = [
    sampleJob({ runId: "b", createdSecondsAgo: 300, heartbeatSecondsAgo: 4, owner: "4242@ci-1" }),
    sampleJob({ runId: "a", createdSecondsAgo: 900 }),
    sampleJob({ name: "knotless-warm-1", warm: { deadlineSeconds: 900 }, createdSecondsAgo: 600 }),
    sampleJob({ runId: "c", cancelRequested: ago(2), heartbeatSecondsAgo: 1 }),
    sampleJob({ name: "not-ours", ours: false }),
  ];
  const rows = buildListRows(
    jobs,
    [pod("knotless-run-b", "Running", "node-a"), pod("knotless-warm-1", "Running", "node-b")],
    NOW,
  );

  it("lists our runs and placeholders oldest first, and leaves other Jobs out", () => {
    assert.deepEqual(
      rows.map((r) => r.job),
      ["knotless-run-a", "knotless-run-c", "knotless-warm-1", "knotless-run-b"],
    );
  });

  it("gives each run its phase, ages, owner and node from its pod, and each placeholder its time left", () => {
    const b = rows.find((r) => r.runId === "b")!;
    assert.deepEqual(
      { phase: b.phase, ageMs: b.ageMs, heartbeatAgeMs: b.heartbeatAgeMs, owner: b.owner, node: b.node, pod: b.pod },
      {
        phase: "running",
        ageMs: 300_000,
        heartbeatAgeMs: 4000,
        owner: "4242@ci-1",
        node: "node-a",
        pod: "knotless-run-b-x1",
      },
    );
    assert.equal(rows.find((r) => r.runId === "a")!.phase, "pending", "no pod yet");
    assert.equal(rows.find((r) => r.runId === "c")!.phase, "cancelling");
    const warm = rows.find((r) => r.role === "warm")!;
    assert.deepEqual(
      { runId: warm.runId, remainingMs: warm.remainingMs, heartbeatAgeMs: warm.heartbeatAgeMs },
      { runId: null, remainingMs: 300_000, heartbeatAgeMs: null },
    );
  });

  it("says why a run's pod ended, in the runner's words when its idle guard stopped it", () => {
    const stopped: IPod = {
      ...pod("knotless-run-d", "Failed", "node-a"),
      metadata: {
        ...pod("knotless-run-d", "Failed", "node-a").metadata,
        annotations: { "knotless.dev/pod-idle-timeout-seconds": "600" },
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
            state: { terminated: { exitCode: 75, reason: "Error" } },
          },
        ],
      },
    };
    const [row] = buildListRows([sampleJob({ runId: "d", failedReason: "BackoffLimitExceeded" })], [stopped], NOW);
    assert.deepEqual(row!.podEnd, {
      reason: "RunnerIdle",
      message: "the pod stopped itself after 10m without runner activity (its runner is gone, or could not reach it)",
    });
    assert.match(
      formatListTable([row!], "ci"),
      /failed .* RunnerIdle: the pod stopped itself after 10m without runner activity/,
    );
    assert.equal(rows.find((r) => r.runId === "b")!.podEnd, null, "a running pod has not ended");
  });

  it("prints a table with one row per Job, and JSON with the same rows", () => {
    const table = formatListTable(rows, "ci").split("\n");
    assert.match(table[0]!, /^RUN ID\s+ROLE\s+PHASE\s+AGE\s+HEARTBEAT\s+OWNER\s+INSTANCE\s+NODE\s+LEFT\s+POD ENDED$/);
    assert.match(
      table.find((line) => line.startsWith("b "))!,
      /^b\s+run\s+running\s+5m00s\s+4\.0s\s+4242@ci-1\s+-\s+node-a\s+-\s+-$/,
    );
    assert.match(
      table.find((line) => line.startsWith("a "))!,
      /\(15m00s\)/,
      "no heartbeat yet: the Job's age, in parentheses",
    );
    assert.match(
      table.find((line) => line.startsWith("knotless-warm-1"))!,
      /^knotless-warm-1\s+warm\s+running\s+10m00s\s+-\s+-\s+-\s+node-b\s+5m00s\s+-$/,
    );
    assert.deepEqual(JSON.parse(formatListJson(rows, "ci")), {
      namespace: "ci",
      jobs: JSON.parse(JSON.stringify(rows)),
    });
    assert.equal(
      formatListTable([], undefined),
      "no runs or warm placeholders in the kubeconfig context's namespace\n",
    );
  });

  it("shows each run's owning instance and whether its Lease is live, expired or gone, and where it was adopted from", () => {
    const jobs = [
      sampleJob({ runId: "x", instance: "b", adoptedFrom: "a" }),
      sampleJob({ runId: "y", instance: "a" }),
      sampleJob({ runId: "z", instance: "c" }),
    ];
    const leases = new Map([
      ["b", { instance: "b", live: true, expiresAt: NOW + 10_000 }],
      ["a", { instance: "a", live: false, expiresAt: NOW - 10_000 }],
    ]);
    const byRun = new Map(buildListRows(jobs, [], NOW, leases).map((row) => [row.runId, row]));
    assert.deepEqual(
      ["x", "y", "z"].map((id) => [byRun.get(id)!.instance, byRun.get(id)!.lease, byRun.get(id)!.adoptedFrom]),
      [
        ["b", "live", "a"],
        ["a", "expired", null],
        ["c", "none", null],
      ],
    );
    const table = formatListTable([...byRun.values()], "ci");
    assert.match(table, /^x .* b \(lease live; adopted from a\) /m);
    assert.match(table, /^y .* a \(lease expired\) /m);
    assert.match(table, /^z .* c \(no lease\) /m);
    assert.equal(buildListRows(jobs, [], NOW)[0]!.lease, null, "Leases not read: no word on them");
  });
});
