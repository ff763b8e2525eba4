// Tests of the safety net that abandons a lifecycle call still waiting after its run's cancel and clean-up bound.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CancelledError } from "../../../src/core/errors.js";
import type { RunEventInput } from "../../../src/events/run-events.js";
import { yieldToCancel } from "../../../src/executor/kubernetes/yield-to-cancel.js";
import { settle } from "../../support/settle.js";
import { UNIT_TIMINGS } from "./test-context.js";

function setUp(cancelCleanupMs: number) {
  const controller = new AbortController();
  const events: RunEventInput[] = [];
  const ctx = {
    signal: controller.signal,
    timings: { ...UNIT_TIMINGS, cancelCleanupMs },
    emit: (event: RunEventInput) => void events.push(event),
  };
  return { ctx, controller, events };
}

describe("yieldToCancel", () => {
  // Mocked timers: the bound (cancelCleanupMs and a 2 s margin) is checked to the millisecond, whatever the load.
  it("abandons a call still waiting after the clean-up bound of its run's cancel, with the cancel's reason and a warning", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const { ctx, controller, events } = setUp(100);
    const stuck = yieldToCancel(ctx, "the download phase", new Promise<never>(() => undefined));
    const seen: { outcome: unknown } = { outcome: "pending" };
    stuck.catch((error: unknown) => (seen.outcome = error));
    controller.abort(new CancelledError("cancelled by SIGTERM"));
    t.mock.timers.tick(2099);
    await settle();
    assert.equal(seen.outcome, "pending", "still waited on 1 ms before the bound");
    assert.equal(events.length, 0, "no warning before the bound");
    t.mock.timers.tick(1);
    await settle();
    const outcome: unknown = await stuck.then(
      () => "resolved",
      (error: unknown) => error,
    );
    assert.ok(outcome instanceof CancelledError && outcome.message === "cancelled by SIGTERM", String(outcome));
    assert.deepEqual(
      events.map((e) => (e.kind === "notice" ? e.message : e.kind)),
      ["the download phase did not end within 2s of the cancel: abandoned, the Job is deleted"],
    );
  });

  it("settles as the call does when it ends within the bound after the cancel", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const { ctx, controller, events } = setUp(100);
    controller.abort(new CancelledError());
    const call = yieldToCancel(ctx, "step 1", new Promise((resolve) => setTimeout(() => resolve("done"), 50)));
    t.mock.timers.tick(50);
    assert.equal(await call, "done");
    t.mock.timers.tick(5000);
    await settle();
    assert.deepEqual(events, []);
  });

  it("never abandons a call of a run that is not cancelled", async (t) => {
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const { ctx, events } = setUp(0);
    const slow = yieldToCancel(ctx, "step 1", new Promise((resolve) => setTimeout(() => resolve("done"), 2500)));
    t.mock.timers.tick(2500);
    assert.equal(await slow, "done");
    assert.deepEqual(events, []);
  });
});
