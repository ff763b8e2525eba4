// Tests the output budget: step output passes until the limit, is cut at a character there, then is counted and dropped.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createOutputBudget, cutToBytes } from "../../src/events/output-budget.js";
import type { RunEvent, RunEventSink } from "../../src/events/run-events.js";
import { SAMPLE_EVENTS } from "../support/run-event-samples.js";

function makeOutput(
  text: string,
  index = 0,
  stream: "stdout" | "stderr" = "stdout",
  time = "2026-11-29T10:00:03.000Z",
): RunEvent {
  return { time, kind: "step-output", index, stream, text };
}

/** Feeds `events` through a budget of `limit` bytes; returns what came out and the counts. */
function passThrough(
  limit: number,
  events: readonly RunEvent[],
): { out: RunEvent[]; counts: ReturnType<ReturnType<typeof createOutputBudget>["counts"]> } {
  const budget = createOutputBudget(limit);
  const out: RunEvent[] = [];
  const sink = budget.through((event) => out.push(event));
  for (const event of events) sink(event);
  return { out, counts: budget.counts() };
}

const outputText = (events: readonly RunEvent[]): string =>
  events.map((event) => (event.kind === "step-output" ? event.text : "")).join("");
const notices = (events: readonly RunEvent[]): RunEvent[] => events.filter((event) => event.kind === "notice");

describe("createOutputBudget", () => {
  it("passes every event unchanged while the step output stays within the limit, counting UTF-8 bytes", () => {
    const events = [
      SAMPLE_EVENTS["step-start"],
      makeOutput("héllo\n"),
      makeOutput("🎉\n", 0, "stderr"),
      SAMPLE_EVENTS["step-end"],
    ];
    const { out, counts } = passThrough(12, events);
    assert.deepEqual(out, events);
    assert.deepEqual(counts, { limitBytes: 12, keptBytes: 12, droppedBytes: 0 });
  });

  it("cuts the event that crosses the limit, then says so once in a warning notice at that event's time", () => {
    const { out, counts } = passThrough(10, [
      makeOutput("12345\n"),
      makeOutput("abcdefgh\n", 1, "stderr", "T2"),
      makeOutput("more\n", 1, "stderr", "T3"),
    ]);
    assert.deepEqual(out.slice(0, 2), [makeOutput("12345\n"), makeOutput("abcd", 1, "stderr", "T2")]);
    assert.equal(out.length, 3);
    const notice = out[2]!;
    assert.equal(notice.kind, "notice");
    assert.equal(notice.time, "T2");
    assert.ok(notice.kind === "notice" && notice.level === "warning");
    assert.match(
      notice.kind === "notice" ? notice.message : "",
      /^step output reached the log limit of 10 bytes in step 2's stderr: the rest of the run's step output is not kept in the logs \(the steps go on running\)/,
    );
    assert.deepEqual(counts, { limitBytes: 10, keptBytes: 10, droppedBytes: 5 + 5 });
  });

  it("drops all later step output of every step and stream, and passes every other event in order", () => {
    const later = [
      SAMPLE_EVENTS["step-end"],
      SAMPLE_EVENTS["step-start"],
      makeOutput("x".repeat(1000), 1),
      SAMPLE_EVENTS.notice,
      makeOutput("y", 1, "stderr"),
      SAMPLE_EVENTS["run-end"],
    ];
    const { out, counts } = passThrough(4, [makeOutput("0123456789"), ...later]);
    assert.deepEqual(
      out.map((event) => event.kind),
      ["step-output", "notice", "step-end", "step-start", "notice", "run-end"],
    );
    assert.equal(outputText(out), "0123");
    assert.equal(notices(out).length, 2, "its own notice and the run's");
    assert.deepEqual(counts, { limitBytes: 4, keptBytes: 4, droppedBytes: 6 + 1000 + 1 });
  });

  it("counts the bytes a notice says the pod dropped past its bound as dropped, and passes the notice on", () => {
    const podDrop: RunEvent = {
      time: "T4",
      kind: "notice",
      level: "warning",
      message: "step 1's stdout passed the pod's output bound",
      podDroppedBytes: 27_000,
    };
    const { out, counts } = passThrough(6, [makeOutput("abcdef"), podDrop, makeOutput("g", 0, "stderr")]);
    assert.deepEqual(out.slice(0, 2), [makeOutput("abcdef"), podDrop]);
    assert.deepEqual(counts, { limitBytes: 6, keptBytes: 6, droppedBytes: 27_000 + 1 });
  });

  it("says nothing when the output fills the limit exactly, and speaks at the first byte past it", () => {
    const exact = passThrough(6, [makeOutput("abc"), makeOutput("def")]);
    assert.equal(notices(exact.out).length, 0);
    assert.deepEqual(exact.counts, { limitBytes: 6, keptBytes: 6, droppedBytes: 0 });
    const past = passThrough(6, [makeOutput("abc"), makeOutput("def"), makeOutput("g")]);
    assert.deepEqual(
      past.out.map((event) => event.kind),
      ["step-output", "step-output", "notice"],
    );
    assert.deepEqual(past.counts, { limitBytes: 6, keptBytes: 6, droppedBytes: 1 });
  });

  it("keeps no output at a limit of 0, and names the limit in KiB or MiB when it is a whole number of them", () => {
    const none = passThrough(0, [makeOutput("a")]);
    assert.deepEqual(
      none.out.map((event) => event.kind),
      ["notice"],
    );
    assert.deepEqual(none.counts, { limitBytes: 0, keptBytes: 0, droppedBytes: 1 });
    const messageAt = (limit: number): string => {
      const notice = notices(passThrough(limit, [makeOutput("x".repeat(limit + 1))]).out)[0];
      return notice?.kind === "notice" ? notice.message : "";
    };
    assert.match(messageAt(1024 * 1024), /log limit of 1 MiB \(1048576 bytes\) in step 1's stdout/);
    assert.match(messageAt(3072), /log limit of 3 KiB \(3072 bytes\)/);
    assert.match(messageAt(1000), /log limit of 1000 bytes/);
  });

  it("names the step whose output crossed the limit as the log does: step 2 (name)", () => {
    const start = { ...SAMPLE_EVENTS["step-start"], index: 1, name: "build" } as RunEvent;
    const notice = notices(passThrough(2, [start, makeOutput("abc", 1)]).out)[0];
    assert.match(notice?.kind === "notice" ? notice.message : "", /in step 2 \(build\)'s stdout:/);
  });

  it("never cuts a character in two, at any limit, and keeps as much as fits", () => {
    const text = "aé€🎉b\r\n";
    const total = Buffer.byteLength(text);
    for (let limit = 0; limit <= total; limit += 1) {
      const { out, counts } = passThrough(limit, [makeOutput(text)]);
      const kept = outputText(out);
      assert.ok(text.startsWith(kept), `limit ${limit}: ${JSON.stringify(kept)}`);
      assert.equal(Buffer.byteLength(kept), counts.keptBytes);
      assert.ok(counts.keptBytes <= limit);
      const nextChar = Array.from(text.slice(kept.length))[0];
      if (nextChar !== undefined)
        assert.ok(
          counts.keptBytes + Buffer.byteLength(nextChar) > limit,
          `limit ${limit}: ${JSON.stringify(nextChar)} would still fit`,
        );
      assert.equal(counts.keptBytes + counts.droppedBytes, total);
      assert.doesNotMatch(kept, /\uFFFD/);
    }
  });

  it("counts the text it is given, so a transform before it (a secret mask) decides what is counted", () => {
    const budget = createOutputBudget(8);
    const out: RunEvent[] = [];
    const mask =
      (next: RunEventSink): RunEventSink =>
      (event) =>
        next(event.kind === "step-output" ? { ...event, text: event.text.replaceAll("hunter2", "***") } : event);
    const emit = mask(budget.through((event) => out.push(event)));
    emit(makeOutput("pw hunter2\n"));
    assert.equal(outputText(out), "pw ***\n");
    assert.deepEqual(budget.counts(), { limitBytes: 8, keptBytes: 7, droppedBytes: 0 });
  });

  it("refuses a limit that is not a whole number of bytes", () => {
    for (const limit of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])
      assert.throws(() => createOutputBudget(limit), RangeError, String(limit));
  });
});

describe("cutToBytes", () => {
  it("returns the text itself when it fits, and a start of whole characters when it does not", () => {
    assert.equal(cutToBytes("abc", 3), "abc");
    assert.equal(cutToBytes("ab🎉", 5), "ab");
    assert.equal(cutToBytes("ab🎉", 6), "ab🎉");
    assert.equal(cutToBytes("€", 2), "");
  });
});
