// KNOTLESS_EXECUTOR_TIMINGS: the defaults when unset, the fields it names over them, a clear message for anything else.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readExecutorTimings } from "../../src/cli/executor-timings.js";
import { InputError } from "../../src/core/errors.js";
import { DEFAULT_TIMINGS } from "../../src/executor/kubernetes/context.js";

describe("readExecutorTimings", () => {
  it("changes nothing but the heartbeat interval when KNOTLESS_EXECUTOR_TIMINGS is unset or empty", () => {
    for (const env of [{}, { KNOTLESS_EXECUTOR_TIMINGS: "" }])
      assert.deepEqual(readExecutorTimings(env), { heartbeatIntervalMs: DEFAULT_TIMINGS.heartbeatIntervalMs });
    assert.deepEqual(readExecutorTimings({ KNOTLESS_HEARTBEAT_INTERVAL: "2s" }), { heartbeatIntervalMs: 2000 });
  });

  it("takes the timings it names, over the heartbeat interval too", () => {
    const createRetry = { budgetMs: 1000, maxAttempts: 2, initialDelayMs: 5, maxDelayMs: 10 };
    assert.deepEqual(
      readExecutorTimings({
        KNOTLESS_HEARTBEAT_INTERVAL: "2s",
        KNOTLESS_EXECUTOR_TIMINGS: JSON.stringify({ createRetry, killGraceSeconds: 1 }),
      }),
      { heartbeatIntervalMs: 2000, createRetry, killGraceSeconds: 1 },
    );
  });

  it("refuses text that is not a JSON object, or that names a timing that does not exist, saying which", () => {
    for (const [text, message] of [
      ["{createRetry", /KNOTLESS_EXECUTOR_TIMINGS is not JSON/],
      ["[1]", /expects a JSON object of timings/],
      ["3", /expects a JSON object of timings/],
      ['{"createRetries": {}}', /timings that do not exist: createRetries \(known: imagePullGraceMs, /],
    ] as const)
      assert.throws(
        () => readExecutorTimings({ KNOTLESS_EXECUTOR_TIMINGS: text }),
        (error) => error instanceof InputError && message.test(error.message),
        text,
      );
  });
});
