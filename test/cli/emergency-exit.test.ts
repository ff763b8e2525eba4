// Tests what a runner that must exit at once still writes: the log files' last lines and result.json.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { prepareEmergencyExit } from "../../src/cli/emergency-exit.js";
import { createHumanLogSink, createNdjsonLogSink, type ClosableSink } from "../../src/events/sinks.js";
import { createStepTracker } from "../../src/run/step-tracker.js";
import { SAMPLE_EVENTS } from "../support/run-event-samples.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const dir = makeTestTempDir("knotless-emergency-exit-");
let runs = 0;

const JOB = {
  namespace: "default",
  name: "knotless-run-42",
  pod: "knotless-run-42-x7k2p",
  node: "node-1",
  image: "busybox:1.36",
};
const LOGS = { limitBytes: 1024, keptBytes: 1024, droppedBytes: 4096 };

/** Log files and a step tracker that have seen a run start and its first step start, as a real run's would. */
function startRun(): { outDir: string; logFiles: ClosableSink[]; tracker: ReturnType<typeof createStepTracker> } {
  runs += 1;
  const outDir = join(dir, `run-${runs}`);
  mkdirSync(outDir);
  const logFiles = [
    createHumanLogSink(join(outDir, "run.log"), { clusterCalls: true }),
    createNdjsonLogSink(join(outDir, "log.ndjson")),
  ];
  const tracker = createStepTracker();
  const runStart = { ...SAMPLE_EVENTS["run-start"], steps: ["build", "test"] };
  const stepStart = { ...SAMPLE_EVENTS["step-start"], index: 0, name: "build" };
  const output = {
    ...SAMPLE_EVENTS["step-output"],
    index: 0,
    stream: "stdout" as const,
    text: "compiling\nhalf a line",
  };
  for (const event of [runStart, stepStart, output]) {
    for (const sink of [...logFiles.map((log) => log.sink), tracker.sink]) sink(event);
  }
  return { outDir, logFiles, tracker };
}

describe("prepareEmergencyExit", () => {
  it("writes result.json with the running step closed as asked, and finishes both logs with the reason and the run's end", () => {
    const { outDir, logFiles, tracker } = startRun();
    const warnings: string[] = [];
    const last = prepareEmergencyExit({
      outDir,
      runId: "42",
      logFiles,
      stepTracker: tracker,
      warn: (m) => warnings.push(m),
    });
    last.log({ kind: "notice", level: "error", message: "SIGTERM again: exiting now" });
    last.finish({
      status: "cancelled",
      error: { message: "cancelled by SIGTERM, then SIGTERM again", reason: "cancelled" },
      stepStatus: "cancelled",
      job: JOB,
      logs: LOGS,
    });
    assert.deepEqual(warnings, []);
    // Read at once: finish wrote synchronously, as a process about to exit needs.
    const result = JSON.parse(readFileSync(join(outDir, "result.json"), "utf8")) as {
      status: string;
      errorReason: string;
      error: string;
      steps: { status: string }[];
      job: unknown;
      logs: unknown;
    };
    assert.equal(result.status, "cancelled");
    assert.equal(result.errorReason, "cancelled");
    assert.equal(result.error, "cancelled by SIGTERM, then SIGTERM again");
    assert.deepEqual(
      result.steps.map((step) => step.status),
      ["cancelled", "skipped"],
    );
    assert.deepEqual(result.job, JOB);
    assert.deepEqual(result.logs, LOGS, "the output budget's counts the CLI handed over");
    const runLog = readFileSync(join(outDir, "run.log"), "utf8").trimEnd().split("\n");
    assert.match(runLog.find((line) => line.includes("[step")) ?? "", /Z \[step 1 stdout\]$/, "the output's header");
    const withoutHeaders = runLog.filter((line) => !line.endsWith(" [step 1 stdout]"));
    assert.equal(withoutHeaders.at(-4), "  compiling");
    assert.equal(
      withoutHeaders.at(-3),
      "  half a line",
      "the unfinished output line is written before the lines that say why the run stopped",
    );
    assert.match(withoutHeaders.at(-2) ?? "", /error: SIGTERM again: exiting now$/);
    assert.match(withoutHeaders.at(-1) ?? "", /run cancelled in .*: cancelled by SIGTERM, then SIGTERM again$/);
    const ndjson = readFileSync(join(outDir, "log.ndjson"), "utf8")
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { event?: string });
    assert.deepEqual(
      ndjson.slice(-2).map((line) => line.event),
      ["notice", "run-end"],
    );
  });

  it("still finishes the logs when result.json cannot be written, and says so", () => {
    const { outDir, logFiles, tracker } = startRun();
    const warnings: string[] = [];
    const last = prepareEmergencyExit({
      outDir: join(outDir, "missing"),
      runId: "42",
      logFiles,
      stepTracker: tracker,
      warn: (m) => warnings.push(m),
    });
    last.finish({
      status: "failed",
      error: { message: "internal error: boom", reason: "internal" },
      stepStatus: "failed",
      job: JOB,
      logs: LOGS,
    });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? "", /^could not write result\.json: ENOENT/);
    assert.match(readFileSync(join(outDir, "run.log"), "utf8"), /run failed in .*: internal error: boom\n$/);
  });

  it("does not throw when a log sink does", () => {
    const { outDir, tracker } = startRun();
    const throwing: ClosableSink = {
      sink: () => {
        throw new Error("a bug in a sink");
      },
      close: async () => {},
      closeSync: () => {},
    };
    const last = prepareEmergencyExit({
      outDir,
      runId: "42",
      logFiles: [throwing],
      stepTracker: tracker,
      warn: () => {},
    });
    assert.doesNotThrow(() => last.log({ kind: "notice", level: "error", message: "x" }));
    assert.doesNotThrow(() =>
      last.finish({
        status: "failed",
        error: { message: "x", reason: "internal" },
        stepStatus: "failed",
        job: JOB,
        logs: LOGS,
      }),
    );
    assert.equal(JSON.parse(readFileSync(join(outDir, "result.json"), "utf8")).status, "failed");
  });
});
