// Tests the phase-start / phase-end pair around one phase of the run.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { RunEventInput } from "../../src/events/run-events.js";
import { runTimedPhase } from "../../src/events/timed-phase.js";

function recordEvents(): { events: RunEventInput[]; emit: (event: RunEventInput) => void } {
  const events: RunEventInput[] = [];
  return { events, emit: (event) => events.push(event) };
}

describe("runTimedPhase", () => {
  it("emits the start before the work runs and an ok end with the work's description after it", async () => {
    const { events, emit } = recordEvents();
    const value = await runTimedPhase(
      emit,
      "upload",
      async () => {
        assert.deepEqual(events, [{ kind: "phase-start", phase: "upload" }], "started before the work");
        await new Promise((resolve) => setTimeout(resolve, 20));
        return 42;
      },
      (n) => `uploaded ${n} files`,
    );
    assert.equal(value, 42);
    const end = events[1];
    assert.ok(end?.kind === "phase-end");
    assert.deepEqual(
      { ...end, durationMs: 0 },
      { kind: "phase-end", phase: "upload", ok: true, durationMs: 0, detail: "uploaded 42 files" },
    );
    assert.ok(end.durationMs >= 15, `took ${end.durationMs} ms`);
  });

  it("carries the bytes the work moved in its ok end when the phase counts them, and none otherwise", async () => {
    const { events, emit } = recordEvents();
    await runTimedPhase(
      emit,
      "upload",
      async () => ({ archiveBytes: 10_240 }),
      () => "sent",
      (summary) => summary.archiveBytes,
    );
    await runTimedPhase(
      emit,
      "scan",
      () => 1,
      () => "listed",
    );
    const ends = events.flatMap((event) => (event.kind === "phase-end" ? [event.bytes] : []));
    assert.deepEqual(ends, [10_240, undefined]);
  });

  it("takes synchronous work too", async () => {
    const { events, emit } = recordEvents();
    assert.equal(
      await runTimedPhase(
        emit,
        "scan",
        () => "listed",
        (s) => s,
      ),
      "listed",
    );
    assert.deepEqual(
      events.map((event) => event.kind),
      ["phase-start", "phase-end"],
    );
  });

  it("emits a failed end with the error's message and rethrows the error itself, thrown or rejected", async () => {
    for (const work of [
      () => {
        throw new RangeError("no such tree");
      },
      () => Promise.reject(new RangeError("no such tree")),
    ]) {
      const { events, emit } = recordEvents();
      await assert.rejects(
        runTimedPhase(emit, "scan", work, () => "never"),
        RangeError,
      );
      assert.equal(events.length, 2);
      assert.deepEqual(
        { ...events[1], durationMs: 0 },
        { kind: "phase-end", phase: "scan", ok: false, durationMs: 0, detail: "no such tree" },
      );
    }
  });
});
