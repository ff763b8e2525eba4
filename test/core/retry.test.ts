import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CancelledError } from "../../src/core/errors.js";
import { describeSpent, retry, type AttemptOutcome, type RetrySpent } from "../../src/core/retry.js";

function fakeClock(): { now: () => number; sleep: (ms: number) => Promise<void>; slept: number[] } {
  let time = 0;
  const slept: number[] = [];
  return { now: () => time, sleep: async (ms) => void (slept.push(ms), (time += ms)), slept };
}

class GaveUp extends Error {}

describe("retry", () => {
  it("returns the value of the first attempt that is done, after backing off", async () => {
    const clock = fakeClock();
    const outcomes: AttemptOutcome<string>[] = [
      { done: false, reason: "a" },
      { done: false, reason: "b" },
      { done: true, value: "ok" },
    ];
    const value = await retry(
      { budgetMs: 60_000, maxAttempts: 10, initialDelayMs: 100, maxDelayMs: 150 },
      { ...clock, giveUp: () => new GaveUp() },
      async (n) => outcomes[n - 1]!,
    );
    assert.equal(value, "ok");
    assert.deepEqual(clock.slept, [100, 150]);
  });

  it("gives up after the attempt limit with every failure reason", async () => {
    const clock = fakeClock();
    let reasons: readonly string[] = [];
    await assert.rejects(
      retry(
        { budgetMs: 60_000, maxAttempts: 3, initialDelayMs: 10, maxDelayMs: 10 },
        { ...clock, giveUp: (r) => ((reasons = r), new GaveUp()) },
        async (n) => ({ done: false, reason: `r${n}` }),
      ),
      GaveUp,
    );
    assert.deepEqual(reasons, ["r1", "r2", "r3"]);
  });

  it("gives up when the next wait would pass the time budget", async () => {
    const clock = fakeClock();
    let attempts = 0;
    await assert.rejects(
      retry(
        { budgetMs: 1000, maxAttempts: 100, initialDelayMs: 400, maxDelayMs: 400 },
        { ...clock, giveUp: () => new GaveUp() },
        async () => (attempts++, { done: false, reason: "x" }),
      ),
      GaveUp,
    );
    assert.equal(attempts, 3);
  });

  it("tells giveUp how many attempts failed in a row and how long since the first, and says it in a sentence", async () => {
    const clock = fakeClock();
    let spent: RetrySpent | undefined;
    await assert.rejects(
      retry(
        { budgetMs: 1000, maxAttempts: 100, initialDelayMs: 400, maxDelayMs: 400 },
        { ...clock, giveUp: (_r, s) => ((spent = s), new GaveUp()) },
        async () => ({ done: false, reason: "x" }),
      ),
      GaveUp,
    );
    assert.deepEqual(spent, { attempts: 3, elapsedMs: 800 });
    assert.equal(describeSpent(spent!), "gave up after 3 attempts in 0.8s");
    assert.equal(describeSpent({ attempts: 1, elapsedMs: 61_400 }), "gave up after 1 attempt in 61s");
  });

  it("starts the budget again after an attempt that made progress", async () => {
    const clock = fakeClock();
    let attempts = 0;
    const value = await retry(
      { budgetMs: 60_000, maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 10 },
      { ...clock, giveUp: () => new GaveUp() },
      async () => {
        attempts++;
        return attempts < 6 ? { done: false, reason: "cut", progressed: true } : { done: true, value: attempts };
      },
    );
    assert.equal(value, 6);
  });

  it("lets a non-retryable error thrown by the attempt through at once", async () => {
    const clock = fakeClock();
    await assert.rejects(
      retry(
        { budgetMs: 1000, maxAttempts: 5, initialDelayMs: 1, maxDelayMs: 1 },
        { ...clock, giveUp: () => new GaveUp() },
        async () => {
          throw new RangeError("final");
        },
      ),
      RangeError,
    );
    assert.deepEqual(clock.slept, []);
  });

  it("stops with CancelledError when the signal is aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(
      retry(
        { budgetMs: 1000, maxAttempts: 5, initialDelayMs: 1, maxDelayMs: 1 },
        { signal: controller.signal, giveUp: () => new GaveUp() },
        async () => ({ done: true, value: 1 }),
      ),
      CancelledError,
    );
  });
});
