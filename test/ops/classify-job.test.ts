import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { judgeJob, readJobFacts, readJobRole, readFinished } from "../../src/ops/classify-job.js";
import { NOW, sampleJob } from "./job-samples.js";

const POLICY = { staleAfterMs: 120_000 };
const judge = (job: ReturnType<typeof sampleJob>, policy: Parameters<typeof judgeJob>[2] = POLICY) =>
  judgeJob(readJobFacts(job), NOW, policy);

describe("judgeJob", () => {
  it("spares a run whose heartbeat is fresh, however old the run is", () => {
    const verdict = judge(sampleJob({ createdSecondsAgo: 86_400, heartbeatSecondsAgo: 10, owner: "4242@ci-1" }));
    assert.equal(verdict.action, "spare");
    assert.equal(verdict.reason, "heartbeat 10.0s ago: its runner is alive, owner 4242@ci-1");
  });

  it("removes a run whose heartbeat is older than --stale-after, naming its owner", () => {
    const verdict = judge(sampleJob({ heartbeatSecondsAgo: 121, owner: "4242@ci-1" }));
    assert.deepEqual(verdict, {
      action: "remove",
      reason: "heartbeat 2m01s ago, stale after 2m00s: its runner is gone, owner 4242@ci-1",
    });
  });

  it("takes the creation time for the heartbeat before the first refresh", () => {
    assert.equal(judge(sampleJob({ createdSecondsAgo: 20 })).action, "spare");
    assert.match(
      judge(sampleJob({ createdSecondsAgo: 300 })).reason,
      /^no heartbeat yet, created 5m00s ago, stale after/,
    );
  });

  it("removes a finished run, Complete or Failed, even with a fresh heartbeat", () => {
    assert.deepEqual(judge(sampleJob({ heartbeatSecondsAgo: 1, complete: true })), {
      action: "remove",
      reason: "finished: Complete 30.0s ago",
    });
    assert.deepEqual(judge(sampleJob({ heartbeatSecondsAgo: 1, failedReason: "DeadlineExceeded" })), {
      action: "remove",
      reason: "finished: Failed (DeadlineExceeded) 30.0s ago",
    });
  });

  it("spares a Job being deleted and a kept one until it finishes", () => {
    assert.equal(judge(sampleJob({ heartbeatSecondsAgo: 900, deleting: true })).reason, "already being deleted");
    assert.equal(judge(sampleJob({ heartbeatSecondsAgo: 900, kept: true })).action, "spare");
    assert.equal(judge(sampleJob({ heartbeatSecondsAgo: 900, kept: true, complete: true })).action, "remove");
  });

  it("limits removal to Jobs older than --older-than", () => {
    const young = sampleJob({ createdSecondsAgo: 600, heartbeatSecondsAgo: 500 });
    assert.deepEqual(judge(young, { staleAfterMs: 120_000, olderThanMs: 3_600_000 }), {
      action: "spare",
      reason: "not older than --older-than 1h00m (age 10m00s)",
    });
    assert.equal(judge(young, { staleAfterMs: 120_000, olderThanMs: 300_000 }).action, "remove");
  });

  it("spares a live warm placeholder, with its time left, and removes one past creation + activeDeadlineSeconds or finished", () => {
    assert.deepEqual(
      judge(sampleJob({ name: "knotless-warm-a", warm: { deadlineSeconds: 900 }, createdSecondsAgo: 600 })),
      { action: "spare", reason: "warm placeholder, 5m00s left" },
    );
    assert.deepEqual(
      judge(sampleJob({ name: "knotless-warm-b", warm: { deadlineSeconds: 300 }, createdSecondsAgo: 600 })),
      { action: "remove", reason: "warm placeholder past its warm time (5m00s ago)" },
    );
    assert.equal(
      judge(
        sampleJob({ name: "knotless-warm-c", warm: { deadlineSeconds: 900 }, createdSecondsAgo: 60, complete: true }),
      ).action,
      "remove",
    );
  });

  it("counts a placeholder's deadline from the Job's start, as Kubernetes does, else from its creation", () => {
    const started = sampleJob({ name: "knotless-warm-s", warm: { deadlineSeconds: 600 }, createdSecondsAgo: 700 });
    started.status = { ...started.status, startTime: new Date(NOW - 300_000).toISOString() };
    assert.deepEqual(judge(started), { action: "spare", reason: "warm placeholder, 5m00s left" });
  });

  it("never takes a warm placeholder's missing heartbeat for an abandoned run", () => {
    assert.equal(
      judge(sampleJob({ name: "knotless-warm-d", warm: { deadlineSeconds: 86_400 }, createdSecondsAgo: 7200 })).action,
      "spare",
    );
    assert.equal(judge(sampleJob({ name: "knotless-warm-e", warm: {}, createdSecondsAgo: 7200 })).action, "spare");
  });
});

describe("readJobFacts", () => {
  it("reads the role, the run id, the owner and the cancel request", () => {
    const facts = readJobFacts(
      sampleJob({ runId: "Run.7", owner: "9@h", cancelRequested: "2026-06-01T11:59:00.000Z", heartbeatSecondsAgo: 3 }),
    );
    assert.equal(facts.role, "run");
    assert.equal(facts.runId, "Run.7");
    assert.deepEqual(facts.owner, { pid: 9, host: "h" });
    assert.deepEqual(facts.cancelRequest, { at: "2026-06-01T11:59:00.000Z", by: undefined });
    assert.deepEqual(facts.heartbeat, { at: NOW - 3000, from: "annotation" });
    assert.equal(readJobRole(sampleJob({ warm: {} })), "warm");
  });

  it("says a Job is finished by its completionTime or a True Complete or Failed condition, and not before", () => {
    assert.equal(readFinished(sampleJob()), undefined);
    assert.equal(readFinished(sampleJob({ complete: true }))?.how, "Complete");
    const onlyTime = sampleJob();
    onlyTime.status = { completionTime: "2026-06-01T11:00:00Z" };
    assert.equal(readFinished(onlyTime)?.how, "Complete");
    const notYet = sampleJob();
    notYet.status = { conditions: [{ type: "Failed", status: "False" }] } as never;
    assert.equal(readFinished(notYet), undefined);
  });
});
