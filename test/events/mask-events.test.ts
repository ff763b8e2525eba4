import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createEventMask } from "../../src/events/mask-events.js";
import type { RunEvent, RunEventInput } from "../../src/events/run-events.js";
import { SecretMasker } from "../../src/secrets/mask-stream.js";

const TIME = "2026-12-01T00:00:00.000Z";

function collect(values: readonly string[]): { sink: (event: RunEventInput) => void; events: RunEvent[] } {
  const events: RunEvent[] = [];
  const sink = createEventMask(new SecretMasker(values)).through((event) => events.push(event));
  return { sink: (event) => sink({ ...event, time: TIME } as RunEvent), events };
}

function stepText(events: readonly RunEvent[], index: number, stream: "stdout" | "stderr"): string {
  return events
    .map((e) => (e.kind === "step-output" && e.index === index && e.stream === stream ? e.text : ""))
    .join("");
}

describe("createEventMask", () => {
  it("masks a secret written one character at a time, releasing the held tail before the step's end", () => {
    const { sink, events } = collect(["hunter2-s3cret"]);
    for (const char of "token=hunter2-s3cret; done\nhunter2")
      sink({ kind: "step-output", index: 0, stream: "stdout", text: char });
    sink({ kind: "step-end", index: 0, name: "a", status: "success", exitCode: 0, durationMs: 1, timedOut: false });
    assert.equal(stepText(events, 0, "stdout"), "token=***; done\nhunter2");
    assert.equal(events.at(-1)?.kind, "step-end", "the held tail comes before step-end");
  });

  it("keeps one stream per step and output stream, so interleaved stdout and stderr do not join into a secret", () => {
    const { sink, events } = collect(["abcdefgh"]);
    sink({ kind: "step-output", index: 0, stream: "stdout", text: "abcd" });
    sink({ kind: "step-output", index: 0, stream: "stderr", text: "efgh" });
    sink({ kind: "step-output", index: 0, stream: "stdout", text: "efgh!" });
    sink({ kind: "run-end", status: "success", exitCode: 0, durationMs: 1 });
    assert.equal(stepText(events, 0, "stdout"), "***!");
    assert.equal(stepText(events, 0, "stderr"), "efgh");
  });

  it("masks every string of other events: notices, errors and the command of a step", () => {
    const { sink, events } = collect(["p4ssw0rd!"]);
    sink({ kind: "notice", level: "error", message: "kubectl said p4ssw0rd!" });
    sink({ kind: "step-start", index: 0, name: "login", command: "echo p4ssw0rd!" });
    sink({ kind: "run-end", status: "failed", exitCode: 3, error: "failed with p4ssw0rd!", durationMs: 1 });
    assert.doesNotMatch(JSON.stringify(events), /p4ssw0rd!/);
    assert.deepEqual(events[0], { kind: "notice", level: "error", message: "kubectl said ***", time: TIME });
  });

  it("releases at run-end the held tail of a step that never ended", () => {
    const { sink, events } = collect(["secret-value"]);
    sink({ kind: "step-output", index: 1, stream: "stdout", text: "ends with secret-val" });
    assert.equal(stepText(events, 1, "stdout"), "ends with ");
    sink({ kind: "run-end", status: "cancelled", exitCode: -1, durationMs: 1 });
    assert.equal(stepText(events, 1, "stdout"), "ends with secret-val");
  });

  it("passes every event through untouched when there is no secret", () => {
    const events: RunEvent[] = [];
    const next = (event: RunEvent): void => void events.push(event);
    assert.equal(createEventMask(new SecretMasker([])).through(next), next);
  });
});
