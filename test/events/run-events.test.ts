// Tests the event emitter: one stamped event fanned out to every sink.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createEventEmitter, type RunEvent } from "../../src/events/run-events.js";

describe("createEventEmitter", () => {
  it("gives every sink the event with the time it happened, in the order the sinks were given", () => {
    const received: Array<[string, RunEvent]> = [];
    const emit = createEventEmitter(
      [(event) => received.push(["first", event]), (event) => received.push(["second", event])],
      () => new Date("2026-11-29T10:00:00.250Z"),
    );
    emit({ kind: "step-start", index: 2, name: "test", command: "make test" });
    const expected: RunEvent = {
      time: "2026-11-29T10:00:00.250Z",
      kind: "step-start",
      index: 2,
      name: "test",
      command: "make test",
    };
    assert.deepEqual(received, [
      ["first", expected],
      ["second", expected],
    ]);
  });

  it("reads the clock once per event, so every sink sees the same time", () => {
    let ticks = 0;
    const times: string[] = [];
    const emit = createEventEmitter(
      [(event) => times.push(event.time), (event) => times.push(event.time)],
      () => new Date(Date.UTC(2026, 10, 29, 10, 0, ++ticks)),
    );
    emit({ kind: "notice", level: "info", message: "one" });
    emit({ kind: "notice", level: "info", message: "two" });
    assert.equal(ticks, 2);
    assert.deepEqual(times, [
      "2026-11-29T10:00:01.000Z",
      "2026-11-29T10:00:01.000Z",
      "2026-11-29T10:00:02.000Z",
      "2026-11-29T10:00:02.000Z",
    ]);
  });

  it("delivers events in the order they were emitted", () => {
    const messages: string[] = [];
    const emit = createEventEmitter([(event) => void (event.kind === "notice" && messages.push(event.message))]);
    for (const message of ["a", "b", "c"]) emit({ kind: "notice", level: "info", message });
    assert.deepEqual(messages, ["a", "b", "c"]);
  });

  it("stamps the current time as ISO 8601 when no clock is given", () => {
    let time = "";
    const before = Date.now();
    createEventEmitter([(event) => (time = event.time)])({ kind: "phase-start", phase: "pod" });
    const after = Date.now();
    assert.match(time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(Date.parse(time) >= before && Date.parse(time) <= after, `${time} is not between ${before} and ${after}`);
  });
});
