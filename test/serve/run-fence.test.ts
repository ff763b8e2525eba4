import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InfraError, RunTakenOverError } from "../../src/core/errors.js";
import { createRunFence, mustReadOwner, type LeaseState, type OwnerRead } from "../../src/serve/run-fence.js";

const DURATION = 300;
const NEVER = new AbortController().signal;

/** A Lease whose state the test sets, and a Job read that answers from a script and counts its calls. */
function scriptedFence(
  reads: Array<OwnerRead | Error>,
  lease: { held: boolean; regainedAt?: number },
  clock = { t: 0 },
) {
  const state: LeaseState = {
    get held() {
      return lease.held;
    },
    get regainedAt() {
      return lease.regainedAt;
    },
    durationMs: DURATION,
  };
  const calls: number[] = [];
  const warnings: string[] = [];
  const fence = createRunFence({
    runId: "r1",
    jobName: "knotless-run-r1",
    instance: "a",
    lease: state,
    now: () => clock.t,
    wait: { budgetMs: 60, maxAttempts: 5, initialDelayMs: 10, maxDelayMs: 10 },
    readOwner: async () => {
      calls.push(clock.t);
      const next = reads.length > 1 ? reads.shift()! : reads[0]!;
      if (next instanceof Error) throw next;
      return next;
    },
    warn: (message) => warnings.push(message),
  });
  return { fence, calls, warnings };
}

describe("mustReadOwner", () => {
  it("needs no read while the Lease has been held since the last read, and one while it is not held", () => {
    assert.equal(mustReadOwner({ held: true, regainedAt: undefined, durationMs: DURATION }, 0), false);
    assert.equal(mustReadOwner({ held: false, regainedAt: undefined, durationMs: DURATION }, 0), true);
  });

  it("after the Lease is held again, needs reads until one made a whole duration after it came back", () => {
    const lease = { held: true, regainedAt: 1000, durationMs: DURATION };
    assert.equal(mustReadOwner(lease, 900), true);
    assert.equal(mustReadOwner(lease, 1200), true);
    assert.equal(mustReadOwner(lease, 1300), false);
  });
});

describe("createRunFence", () => {
  it("makes no cluster call for any action while the Lease is held", async () => {
    const { fence, calls } = scriptedFence([{ kind: "owner", owner: "b" }], { held: true });
    for (const index of [0, 1, 2]) await fence({ kind: "step", index }, NEVER);
    await fence({ kind: "teardown" }, NEVER);
    assert.equal(calls.length, 0);
  });

  it("reads the Job's owner before each action while the Lease is not held, and lets the run go on while it names this instance", async () => {
    const { fence, calls } = scriptedFence([{ kind: "owner", owner: "a" }], { held: false });
    await fence({ kind: "step", index: 0 }, NEVER);
    await fence({ kind: "outputs" }, NEVER);
    assert.equal(calls.length, 2);
  });

  it("rejects with RunTakenOverError naming the adopter when the Job's owner is another instance", async () => {
    const { fence } = scriptedFence([{ kind: "owner", owner: "b" }], { held: false });
    await assert.rejects(fence({ kind: "step", index: 2 }, NEVER), (error: unknown) => {
      assert.ok(error instanceof RunTakenOverError);
      assert.equal(error.owner, "b");
      assert.match(error.message, /adopted by instance b .*before step 3/);
      return true;
    });
  });

  it("lets the action go on when the Job is gone: no instance owns the run", async () => {
    const { fence } = scriptedFence([{ kind: "gone" }], { held: false });
    await fence({ kind: "teardown" }, NEVER);
  });

  it("waits while the Job cannot be read, told once, and goes on once a read names this instance", async () => {
    const cut = new Error("connect ECONNREFUSED");
    const { fence, calls, warnings } = scriptedFence([cut, cut, { kind: "owner", owner: "a" }], { held: false });
    await fence({ kind: "step", index: 1 }, NEVER);
    assert.equal(calls.length, 3);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /cannot be read \(connect ECONNREFUSED\): waiting before step 2/);
  });

  it("gives up with InfraError ownership-unknown within its bound when the Job stays unreadable", async () => {
    const { fence } = scriptedFence([new Error("connect ECONNREFUSED")], { held: false });
    const started = Date.now();
    await assert.rejects(fence({ kind: "teardown" }, NEVER), (error: unknown) => {
      assert.ok(error instanceof InfraError);
      assert.equal(error.reason, "ownership-unknown");
      assert.match(error.message, /before the teardown .*leaves its Job and pod untouched/);
      return true;
    });
    assert.ok(Date.now() - started < 2000);
  });

  it("after the Lease comes back from a lapse, reads again until a read a whole duration later, then stops reading", async () => {
    const clock = { t: 0 };
    const lease: { held: boolean; regainedAt?: number } = { held: true };
    const { fence, calls } = scriptedFence([{ kind: "owner", owner: "a" }], lease, clock);
    clock.t = 1000;
    lease.regainedAt = 900; // lapsed and came back after the run's last proof
    await fence({ kind: "step", index: 0 }, NEVER);
    clock.t = 1100;
    await fence({ kind: "step", index: 1 }, NEVER);
    clock.t = 1250;
    await fence({ kind: "step", index: 2 }, NEVER);
    await fence({ kind: "outputs" }, NEVER);
    assert.deepEqual(calls, [1000, 1100, 1250]);
  });
});
