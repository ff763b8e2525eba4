// Tests the checkpointer: a checkpoint only where nothing is held back, saved only once the logs hold its lengths, at most one a second while a step prints.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LogFileProgress } from "../../src/events/sinks.js";
import { Checkpointer } from "../../src/run/checkpointer.js";
import type { RunCheckpoint } from "../../src/run/run-checkpoint.js";

/** A log whose writes land when the test says. */
function makeLog(): LogFileProgress & { queue(bytes: number): void; land(): void; hold: boolean } {
  let queued = 0;
  let written = 0;
  const waiters: Array<{ length: number; resolve: (ok: boolean) => void }> = [];
  return {
    hold: false,
    queuedLength: () => queued,
    holding() {
      return this.hold;
    },
    whenWritten: (length) =>
      written >= length ? Promise.resolve(true) : new Promise((resolve) => waiters.push({ length, resolve })),
    queue: (bytes) => void (queued += bytes),
    land() {
      written = queued;
      for (const waiter of waiters.splice(0)) waiter.resolve(written >= waiter.length);
    },
  };
}

function setUp(everyMs = 1000) {
  const saved: RunCheckpoint[] = [];
  const runLog = makeLog();
  const ndjson = makeLog();
  let maskHolding = false;
  const checkpointer = new Checkpointer({
    store: { save: (checkpoint) => saved.push(checkpoint) },
    logs: [runLog, ndjson],
    maskHolding: () => maskHolding,
    snapshot: () => ({ phase: "steps" }) as Omit<RunCheckpoint, "logs" | "step">,
    everyMs,
    warn: () => {},
  });
  return { saved, runLog, ndjson, checkpointer, setMaskHolding: (held: boolean) => (maskHolding = held) };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("Checkpointer", () => {
  it("saves a phase's checkpoint only once both logs hold the lengths it records", async () => {
    const { saved, runLog, ndjson, checkpointer } = setUp();
    runLog.queue(10);
    ndjson.queue(20);
    const marked = checkpointer.mark();
    await tick();
    assert.equal(saved.length, 0);
    runLog.land();
    await tick();
    assert.equal(saved.length, 0);
    ndjson.land();
    await marked;
    assert.deepEqual(
      saved.map((c) => c.logs),
      [{ runLog: 10, ndjson: 20 }],
    );
  });

  it("takes a step's offsets only where the decoder, the mask and run.log hold nothing back", async () => {
    const { saved, runLog, checkpointer, setMaskHolding } = setUp(0);
    await checkpointer.mark({ index: 0, startedAt: "t", offsets: null });
    checkpointer.stepOutput(0, { stdout: 5, stderr: 0 }, false); // half a character
    setMaskHolding(true);
    checkpointer.stepOutput(0, { stdout: 6, stderr: 0 }, true); // a secret's start held back
    setMaskHolding(false);
    runLog.hold = true;
    checkpointer.stepOutput(0, { stdout: 7, stderr: 0 }, true); // an unfinished line
    runLog.hold = false;
    await tick();
    assert.deepEqual(
      saved.map((c) => c.step?.offsets ?? null),
      [null],
    );
    checkpointer.stepOutput(0, { stdout: 9, stderr: 1 }, true);
    await tick();
    assert.deepEqual(
      saved.map((c) => c.step?.offsets ?? null),
      [null, { stdout: 9, stderr: 1 }],
    );
  });

  it("writes at most one step checkpoint per interval, the newest offsets at its end", async () => {
    const { saved, checkpointer } = setUp(200);
    await checkpointer.mark({ index: 0, startedAt: "t", offsets: null });
    await new Promise((resolve) => setTimeout(resolve, 210));
    for (let i = 1; i <= 5; i += 1) checkpointer.stepOutput(0, { stdout: i, stderr: 0 }, true);
    await tick();
    assert.deepEqual(
      saved.map((c) => c.step?.offsets?.stdout ?? null),
      [null, 1],
    );
    await new Promise((resolve) => setTimeout(resolve, 250));
    assert.deepEqual(
      saved.map((c) => c.step?.offsets?.stdout ?? null),
      [null, 1, 5],
    );
    checkpointer.stop();
  });

  it("saves nothing once stopped, and ignores output of another step", async () => {
    const { saved, checkpointer } = setUp(0);
    await checkpointer.mark({ index: 1, startedAt: "t", offsets: null });
    checkpointer.stepOutput(0, { stdout: 3, stderr: 0 }, true);
    checkpointer.stop();
    checkpointer.stepOutput(1, { stdout: 3, stderr: 0 }, true);
    await checkpointer.mark();
    assert.equal(saved.length, 1);
  });
});
