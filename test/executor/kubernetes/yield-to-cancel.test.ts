// Tests of the safety net that abandons a lifecycle call still waiting after its run's cancel and clean-up bound.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CancelledError } from "../../../src/core/errors.js";
import type { RunEventInput } from "../../../src/events/run-events.js";
import { yieldToCancel } from "../../../src/executor/kubernetes/yield-to-cancel.js";
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
  it("abandons a call still waiting after the clean-up bound of its run's cancel, with the cancel's reason and a warning", async () => {
    const { ctx, controller, events } = setUp(100);
    const stuck = yieldToCancel(ctx, "the download phase", new Promise<never>(() => undefined));
    const started = Date.now();
    controller.abort(new CancelledError("cancelled by SIGTERM"));
    await assert.rejects(
      stuck,
      (error: unknown) => error instanceof CancelledError && error.message === "cancelled by SIGTERM",
    );
    const took = Date.now() - started;
    assert.ok(took >= 100 && took < 4000, `abandoned after ${took} ms`);
    assert.deepEqual(
      events.map((e) => (e.kind === "notice" ? e.message : e.kind)),
      ["the download phase did not end within 2s of the cancel: abandoned, the Job is deleted"],
    );
  });

  it("settles as the call does when it ends within the bound after the cancel", async () => {
    const { ctx, controller, events } = setUp(100);
    controller.abort(new CancelledError());
    assert.equal(
      await yieldToCancel(ctx, "step 1", new Promise((resolve) => setTimeout(() => resolve("done"), 50))),
      "done",
    );
    assert.deepEqual(events, []);
  });

  it("never abandons a call of a run that is not cancelled", async () => {
    const { ctx, events } = setUp(0);
    const slow = yieldToCancel(ctx, "step 1", new Promise((resolve) => setTimeout(() => resolve("done"), 2500)));
    assert.equal(await slow, "done");
    assert.deepEqual(events, []);
  });
});
