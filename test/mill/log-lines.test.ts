// Spindle's log-line JSON from the run's events: control lines for step start and end, data lines with their stream, setup as system steps.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildLogLines, formatLogLine } from "../../src/mill/log-lines.js";

const time = "2026-12-07T10:00:00.000Z";

describe("spindle log lines", () => {
  it("writes a user step's start with its id, kind 1 and command, its output as data on its stream with trailing newlines trimmed, and its end", () => {
    assert.deepEqual(buildLogLines({ kind: "step-start", time, index: 0, name: "test", command: "go test ./..." }), [
      {
        kind: "control",
        content: "test",
        time,
        step_id: 0,
        step_status: "start",
        step_kind: 1,
        step_command: "go test ./...",
      },
    ]);
    assert.deepEqual(buildLogLines({ kind: "step-output", time, index: 0, stream: "stderr", text: "a\nb\n\n" }), [
      { kind: "data", content: "a\nb", time, step_id: 0, stream: "stderr" },
    ]);
    assert.deepEqual(
      buildLogLines({
        kind: "step-end",
        time,
        index: 0,
        name: "test",
        status: "failed",
        exitCode: 1,
        durationMs: 5,
        timedOut: false,
      }),
      [{ kind: "control", content: "test", time, step_id: 0, step_status: "end", step_kind: 1 }],
    );
  });

  it("shows the pod's start and the clone as system steps (-1, kind omitted), with a failed phase's detail on stderr", () => {
    const start = buildLogLines({ kind: "phase-start", time, phase: "clone" });
    assert.deepEqual(
      start.map((line) => [line.kind, line.step_id, line.step_status, line.step_kind]),
      [["control", -1, "start", undefined]],
    );
    const end = buildLogLines({
      kind: "phase-end",
      time,
      phase: "clone",
      ok: false,
      durationMs: 1,
      detail: "git fetch failed",
    });
    assert.deepEqual(
      end.map((line) => [line.kind, line.content, line.stream]),
      [
        ["data", "git fetch failed", "stderr"],
        ["control", "clone: fetch the commit", undefined],
      ],
    );
    assert.deepEqual(buildLogLines({ kind: "kubectl", time, args: ["get", "pods"] }), []);
  });

  it("formats one line as a JSON object and a newline, as LiveLog carries it", () => {
    assert.equal(
      formatLogLine({ kind: "data", content: "x", time, step_id: 1, stream: "stdout" }),
      `{"kind":"data","content":"x","time":"${time}","step_id":1,"stream":"stdout"}\n`,
    );
  });
});
