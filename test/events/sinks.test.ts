// Tests the three consumers of the event stream: run.log, log.ndjson and the console.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { describe, it } from "node:test";
import { formatEvent } from "../../src/events/format-event.js";
import type { RunEvent } from "../../src/events/run-events.js";
import {
  createConsoleSink,
  createHumanLogSink,
  createNdjsonLogSink,
  OUTPUT_INDENT,
  type ClosableSink,
} from "../../src/events/sinks.js";
import { SAMPLE_EVENTS, listSampleEvents } from "../support/run-event-samples.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const dir = makeTestTempDir("knotless-events-");
let files = 0;

/** A fresh path in the test's temp dir. */
function makeLogPath(name: string): string {
  files += 1;
  return join(dir, `${files}-${name}`);
}

function makeOutput(
  index: number,
  stream: "stdout" | "stderr",
  text: string,
  time = "2026-11-29T10:00:03.000Z",
): RunEvent {
  return { time, kind: "step-output", index, stream, text };
}

function makeStepEnd(index: number, time = "2026-11-29T10:00:09.000Z"): RunEvent {
  return {
    time,
    kind: "step-end",
    index,
    name: `step-${index}`,
    status: "success",
    exitCode: 0,
    durationMs: 1500,
    timedOut: false,
  };
}

/** Feeds the events to a log sink writing a new file, closes it and returns the file's text. */
async function writeLog(create: (path: string) => ClosableSink, events: readonly RunEvent[]): Promise<string> {
  const path = makeLogPath("log");
  const log = create(path);
  for (const event of events) log.sink(event);
  await log.close();
  return readFileSync(path, "utf8");
}

/** The lines of a file that ends every line with "\n" (fails when it does not). */
function splitLines(text: string): string[] {
  if (text === "") return [];
  assert.ok(text.endsWith("\n"), `the file does not end with a newline: ${JSON.stringify(text.slice(-40))}`);
  return text.slice(0, -1).split("\n");
}

const writeHumanLog = async (events: readonly RunEvent[], clusterCalls = true): Promise<string[]> =>
  splitLines(await writeLog((path) => createHumanLogSink(path, { clusterCalls }), events));

const writeNdjsonLog = async (events: readonly RunEvent[]): Promise<Array<Record<string, unknown>>> =>
  splitLines(await writeLog(createNdjsonLogSink, events)).map((line) => JSON.parse(line) as Record<string, unknown>);

/** Every way to cut `text` into events: one code point each, and in two at every code point. */
function listChunkings(text: string): string[][] {
  const points = Array.from(text);
  const chunkings = [points];
  for (let cut = 1; cut < points.length; cut += 1)
    chunkings.push([points.slice(0, cut).join(""), points.slice(cut).join("")]);
  return chunkings;
}

/** Runs a child node that hands one event to a log sink writing `path`, without closing it; returns how it exited. */
function runSinkInChild(
  factory: "createHumanLogSink" | "createNdjsonLogSink",
  path: string,
): { status: number | null; stderr: string } {
  const moduleUrl = new URL("../../src/events/sinks.js", import.meta.url).href;
  const script = [
    `const sinks = await import(${JSON.stringify(moduleUrl)});`,
    `const log = sinks.${factory}(${JSON.stringify(path)}, { clusterCalls: true });`,
    `log.sink(${JSON.stringify(SAMPLE_EVENTS.notice)});`,
  ].join("\n");
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  return { status: child.status, stderr: child.stderr };
}

const MIXED_OUTPUT = "héllo wörld 🎉\r\nzweite Zeile\n\nthird\r\nno newline at the end";

/** An ISO time `ms` milliseconds after 10:00:03 (the step's start in the samples). */
function at(ms: number): string {
  return new Date(Date.parse("2026-11-29T10:00:03.000Z") + ms).toISOString();
}

/** The output a run.log holds: its indented lines, without the indent, headers and runner lines left out. */
function readOutputBack(lines: readonly string[]): string {
  return lines
    .filter((line) => line.startsWith(OUTPUT_INDENT))
    .map((line) => `${line.slice(OUTPUT_INDENT.length)}\n`)
    .join("");
}

describe("createHumanLogSink", () => {
  it("writes a line starting with the event's time for every runner event a person needs to see, and output under a header", async () => {
    const events = listSampleEvents();
    const expected = events.flatMap((event) => {
      if (event.kind === "step-output") return [`${event.time} [step 1 stdout]`, "  built"];
      const text = formatEvent(event);
      // A service's log lines are lines of their own, each stamped.
      return text === undefined ? [] : text.split("\n").map((line) => `${event.time} ${line}`);
    });
    assert.equal(expected.length, events.length + 1, "one line per event, two for the sample service-log");
    assert.deepEqual(await writeHumanLog(events), expected);
  });

  it("writes a run of output of one step and stream under one header, each line indented by two spaces", async () => {
    const lines = await writeHumanLog([
      makeOutput(0, "stdout", "compiling a.c\ncompiling b.c\n", at(0)),
      makeOutput(0, "stdout", "linking\n", at(300)),
    ]);
    assert.deepEqual(lines, [`${at(0)} [step 1 stdout]`, "  compiling a.c", "  compiling b.c", "  linking"]);
  });

  it("assembles output split across events into whole lines, with a header whenever the stream changes, stamped when its first line was completed", async () => {
    const lines = await writeHumanLog([
      makeOutput(0, "stdout", "compiling\nhal", at(1)),
      makeOutput(0, "stderr", "warn", at(2)),
      makeOutput(0, "stdout", "f done\n", at(3)),
      makeOutput(0, "stderr", "ing: x\nsecond warning\n", at(4)),
      makeOutput(1, "stderr", "next step\n", at(5)),
    ]);
    assert.deepEqual(lines, [
      `${at(1)} [step 1 stdout]`,
      "  compiling",
      "  half done",
      `${at(4)} [step 1 stderr]`,
      "  warning: x",
      "  second warning",
      `${at(5)} [step 2 stderr]`,
      "  next step",
    ]);
  });

  it("starts a new header once a second has passed since the last one, so no output line is more than a second after its header's time", async () => {
    const times = [0, 400, 999, 1000, 1500, 2000, 7000];
    const lines = await writeHumanLog(times.map((ms) => makeOutput(0, "stdout", `at ${ms}\n`, at(ms))));
    assert.deepEqual(lines, [
      `${at(0)} [step 1 stdout]`,
      "  at 0",
      "  at 400",
      "  at 999",
      `${at(1000)} [step 1 stdout]`,
      "  at 1000",
      "  at 1500",
      `${at(2000)} [step 1 stdout]`,
      "  at 2000",
      `${at(7000)} [step 1 stdout]`,
      "  at 7000",
    ]);
    assert.ok(times.length < lines.length && lines.length <= 2 * times.length);
  });

  it("writes an unfinished output line before a runner line that comes in the middle of it, and starts a new header after it", async () => {
    const notice: RunEvent = {
      time: at(20),
      kind: "notice",
      level: "warning",
      message: "exec stream cut; reconnecting",
    };
    const lines = await writeHumanLog([
      makeOutput(0, "stdout", "one\nhalf", at(10)),
      notice,
      makeOutput(0, "stdout", " more\ntwo\n", at(30)),
    ]);
    assert.deepEqual(lines, [
      `${at(10)} [step 1 stdout]`,
      "  one",
      "  half",
      `${at(20)} warning: exec stream cut; reconnecting`,
      `${at(30)} [step 1 stdout]`,
      "   more",
      "  two",
    ]);
  });

  it("writes the unfinished last line of each stream when the step ends, before the step's end line", async () => {
    const lines = await writeHumanLog([
      makeOutput(1, "stdout", "done\nno newline", at(1)),
      makeOutput(1, "stderr", "nor here", at(2)),
      makeStepEnd(1, at(3)),
      makeOutput(2, "stdout", "next step\n", at(4)),
    ]);
    assert.deepEqual(lines, [
      `${at(1)} [step 2 stdout]`,
      "  done",
      "  no newline",
      `${at(3)} [step 2 stderr]`,
      "  nor here",
      `${at(3)} ✔ step 2: step-1 success (exit 0, 1.5s)`,
      `${at(4)} [step 3 stdout]`,
      "  next step",
    ]);
  });

  it("writes the same lines however the output is cut into events, multi-byte characters and \\r\\n included", async () => {
    const render = async (chunks: readonly string[]): Promise<string[]> =>
      writeHumanLog([...chunks.map((text) => makeOutput(0, "stdout", text, at(0))), makeStepEnd(0, at(0))]);
    const whole = await render([MIXED_OUTPUT]);
    assert.deepEqual(whole, [
      `${at(0)} [step 1 stdout]`,
      ...["héllo wörld 🎉", "zweite Zeile", "", "third", "no newline at the end"].map((text) => `  ${text}`),
      `${at(0)} ✔ step 1: step-0 success (exit 0, 1.5s)`,
    ]);
    for (const chunks of listChunkings(MIXED_OUTPUT))
      assert.deepEqual(await render(chunks), whole, JSON.stringify(chunks));
  });

  it("drops the carriage return of \\r\\n line endings and keeps one inside a line", async () => {
    const lines = await writeHumanLog([
      makeOutput(0, "stdout", "one\r\n50%\r100%\r\ntwo\r", at(0)),
      makeOutput(0, "stdout", "\n", at(1)),
    ]);
    assert.deepEqual(lines, [`${at(0)} [step 1 stdout]`, "  one", "  50%\r100%", "  two"]);
  });

  it("holds output that can be read back exactly from its indented lines", async () => {
    const output = Array.from(
      { length: 500 },
      (_, i) =>
        `${i % 7 === 0 ? "" : `line ${i} `}${"2026-11-29T10:00:00.000Z [step 9 stdout] lookalike".slice(0, i % 40)}\n`,
    ).join("");
    const events = [];
    for (let start = 0, n = 0; start < output.length; start += 97, n += 1)
      events.push(makeOutput(0, "stdout", output.slice(start, start + 97), at(n * 50)));
    assert.equal(readOutputBack(await writeHumanLog(events)), output);
  });

  it("is at most 10 % larger than the output it holds for 37-byte lines, printed for seconds", async () => {
    const line = "  CC      src/net/http-client.o   ok\n";
    const chunk = line.repeat(1000);
    const events = Array.from({ length: 200 }, (_, i) => makeOutput(0, "stdout", chunk, at(i * 25))); // 7.4 MB over 5 s
    const path = makeLogPath("size");
    const log = createHumanLogSink(path, { clusterCalls: true });
    for (const event of events) log.sink(event);
    await log.close();
    const { size } = statSync(path);
    const outputBytes = chunk.length * events.length;
    assert.ok(
      size <= outputBytes * 1.1,
      `run.log is ${size} bytes for ${outputBytes} bytes of output (${((size / outputBytes - 1) * 100).toFixed(1)} % over)`,
    );
  });

  it("gives every line of a multi-line message its own timestamp", async () => {
    const lines = await writeHumanLog([{ time: "T", kind: "notice", level: "info", message: "first\nsecond" }]);
    assert.deepEqual(lines, ["T first", "T second"]);
  });

  it("leaves cluster calls (kubectl's and the API transport's) out unless asked for them", async () => {
    const events = [SAMPLE_EVENTS.kubectl, SAMPLE_EVENTS["api-call"], SAMPLE_EVENTS["pod-ready"]];
    assert.deepEqual(await writeHumanLog(events, false), [
      `${SAMPLE_EVENTS["pod-ready"].time} ${formatEvent(SAMPLE_EVENTS["pod-ready"])}`,
    ]);
    assert.deepEqual(
      await writeHumanLog(events, true),
      events.map((event) => `${event.time} ${formatEvent(event)}`),
    );
  });

  it("has every line on disk when close resolves", async () => {
    const events = Array.from({ length: 20_000 }, (_, i) =>
      makeOutput(0, "stdout", `line ${i} ${"x".repeat(100)}\n`, at(i)),
    );
    const lines = await writeHumanLog(events);
    assert.equal(lines.filter((line) => line.startsWith(OUTPUT_INDENT)).length, 20_000);
    assert.equal(lines.at(-1), `  line 19999 ${"x".repeat(100)}`);
  });

  it("writes an unfinished output line when it is closed before the step ended", async () => {
    assert.deepEqual(await writeHumanLog([makeOutput(0, "stdout", "cut off", at(0))]), [
      `${at(0)} [step 1 stdout]`,
      "  cut off",
    ]);
  });

  it("writes the unfinished output line of a step that never ended before the run's end line", async () => {
    const runEnd: RunEvent = {
      time: at(5),
      kind: "run-end",
      status: "failed",
      exitCode: -1,
      error: "internal error: boom",
      durationMs: 2000,
    };
    assert.deepEqual(await writeHumanLog([makeOutput(0, "stdout", "cut off", at(0)), runEnd]), [
      `${at(5)} [step 1 stdout]`,
      "  cut off",
      `${at(5)} ${formatEvent(runEnd)}`,
    ]);
  });
});

describe("a log file that fails", () => {
  const sinks = [
    ["run.log", "createHumanLogSink", (path: string) => createHumanLogSink(path, { clusterCalls: true })],
    ["log.ndjson", "createNdjsonLogSink", createNdjsonLogSink],
  ] as const;

  for (const [name, factory, create] of sinks) {
    it(`does not throw from the sink, and close rejects with the error, when ${name} cannot be created`, async () => {
      const log = create(join(dir, "missing", name));
      assert.doesNotThrow(() => log.sink(SAMPLE_EVENTS.notice));
      await assert.rejects(log.close(), { code: "ENOENT" });
    });

    it(`does not crash the process when ${name} cannot be created`, () => {
      const child = runSinkInChild(factory, join(dir, "missing", name));
      assert.equal(child.status, 0, child.stderr);
    });

    it(
      `keeps taking events when ${name} fills the disk mid-run, and close rejects naming the file and ENOSPC`,
      { skip: existsSync("/dev/full") ? false : "no /dev/full" },
      async () => {
        const log = create("/dev/full");
        for (let i = 0; i < 1000; i += 1)
          assert.doesNotThrow(() => log.sink(makeOutput(0, "stdout", `line ${i} ${"x".repeat(200)}\n`)));
        await assert.rejects(log.close(), (error: Error & { code?: string }) => {
          assert.equal(error.code, "ENOSPC");
          assert.match(error.message, /^cannot write \/dev\/full: ENOSPC/);
          return true;
        });
      },
    );
  }
});

describe("createNdjsonLogSink", () => {
  it("writes one JSON object per line for every event, with its time, kind and step, and a status or stream by kind", async () => {
    const events = [...listSampleEvents(), makeOutput(0, "stderr", "two\nlines\r\nand a \u2028 separator")];
    const records = await writeNdjsonLog(events);
    assert.equal(records.length, events.length);
    for (const [i, record] of records.entries()) {
      assert.equal(record.time, events[i]!.time);
      assert.ok(Number.isInteger(record.step), JSON.stringify(record));
      if (record.kind === "control")
        assert.ok(record.status === "start" || record.status === "end", JSON.stringify(record));
      else if (record.kind === "data")
        assert.ok(typeof record.stream === "string" && typeof record.content === "string", JSON.stringify(record));
      else assert.fail(`kind is neither control nor data: ${JSON.stringify(record)}`);
    }
  });

  it("writes step starts and ends as control lines with the step's index and outcome", async () => {
    const end: RunEvent = {
      time: "T2",
      kind: "step-end",
      index: 1,
      name: "test",
      status: "timeout",
      exitCode: null,
      durationMs: 600_000,
      timedOut: true,
    };
    const records = await writeNdjsonLog([
      { time: "T1", kind: "step-start", index: 1, name: "test", command: "make test" },
      end,
    ]);
    assert.deepEqual(records, [
      { time: "T1", kind: "control", step: 1, status: "start", stepKind: "user", name: "test", command: "make test" },
      {
        time: "T2",
        kind: "control",
        step: 1,
        status: "end",
        stepKind: "user",
        name: "test",
        stepStatus: "timeout",
        exitCode: null,
        durationMs: 600_000,
        timedOut: true,
      },
    ]);
  });

  it("writes the runner's phases as control lines of step -1", async () => {
    const records = await writeNdjsonLog([SAMPLE_EVENTS["phase-start"], SAMPLE_EVENTS["phase-end"]]);
    assert.deepEqual(records, [
      {
        time: SAMPLE_EVENTS["phase-start"].time,
        kind: "control",
        step: -1,
        status: "start",
        stepKind: "system",
        name: "create",
      },
      {
        time: SAMPLE_EVENTS["phase-end"].time,
        kind: "control",
        step: -1,
        status: "end",
        stepKind: "system",
        name: "create",
        ok: true,
        durationMs: 120,
        detail: "job.batch/knotless-run-42 in ci",
      },
    ]);
  });

  it("writes cache and artifact events as data lines of step -1 with their figures as fields", async () => {
    const records = await writeNdjsonLog([SAMPLE_EVENTS["cache-restore"], SAMPLE_EVENTS.artifact]);
    assert.deepEqual(records, [
      {
        time: SAMPLE_EVENTS["cache-restore"].time,
        kind: "data",
        step: -1,
        stream: "system",
        content: formatEvent(SAMPLE_EVENTS["cache-restore"]),
        event: "cache-restore",
        cache: { key: "deps-3f2a", status: "fallback", restoredKey: "deps-19c0", bytes: 1_250_000, durationMs: 900 },
      },
      {
        time: SAMPLE_EVENTS.artifact.time,
        kind: "data",
        step: -1,
        stream: "system",
        content: formatEvent(SAMPLE_EVENTS.artifact),
        event: "artifact",
        artifact: { name: "dist", status: "collected", files: 3, bytes: 4096, durationMs: 300, required: false },
      },
    ]);
  });

  it("writes step output as data lines with its stream and the text exactly as it arrived, however it was cut", async () => {
    for (const chunks of listChunkings(MIXED_OUTPUT)) {
      const events = chunks.flatMap((text) => [
        makeOutput(3, "stdout", text),
        makeOutput(3, "stderr", text.toUpperCase()),
      ]);
      const records = await writeNdjsonLog(events);
      assert.equal(records.length, events.length);
      for (const record of records)
        assert.deepEqual(Object.keys(record).sort(), ["content", "kind", "step", "stream", "time"]);
      const contentOf = (stream: string): string =>
        records
          .filter((record) => record.kind === "data" && record.step === 3 && record.stream === stream)
          .map((record) => record.content)
          .join("");
      assert.equal(contentOf("stdout"), MIXED_OUTPUT);
      assert.equal(contentOf("stderr"), MIXED_OUTPUT.toUpperCase());
    }
  });

  it("writes the runner's messages as data lines of step -1 on the system stream, with their human text and kind", async () => {
    const events = [
      SAMPLE_EVENTS["run-start"],
      SAMPLE_EVENTS.kubectl,
      SAMPLE_EVENTS["pod-progress"],
      SAMPLE_EVENTS["pod-ready"],
      SAMPLE_EVENTS.notice,
      SAMPLE_EVENTS["run-end"],
    ];
    const records = await writeNdjsonLog(events);
    assert.deepEqual(
      records,
      events.map((event) => ({
        time: event.time,
        kind: "data",
        step: -1,
        stream: "system",
        content: formatEvent(event),
        event: event.kind,
      })),
    );
  });

  it("has every line on disk when close resolves", async () => {
    const events = Array.from({ length: 20_000 }, (_, i) => makeOutput(0, "stdout", `line ${i} ${"x".repeat(100)}\n`));
    const records = await writeNdjsonLog(events);
    assert.equal(records.length, 20_000);
    assert.equal(records.at(-1)!.content, `line 19999 ${"x".repeat(100)}\n`);
  });
});

describe("createConsoleSink", () => {
  /** A console whose stdout and stderr record their writes in one list, in the order they happened. */
  function makeConsole(clusterCalls: boolean): { log: ClosableSink; writes: Array<[string, string]> } {
    const writes: Array<[string, string]> = [];
    const record = (name: string): Writable =>
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          writes.push([name, chunk.toString()]);
          callback();
        },
      });
    return { log: createConsoleSink(record("out"), record("err"), { clusterCalls }), writes };
  }

  it("writes step output of both streams to stdout as it arrives, unfinished lines included", () => {
    const { log, writes } = makeConsole(false);
    log.sink(makeOutput(0, "stdout", "hal"));
    assert.deepEqual(writes, [["out", "hal"]]);
    log.sink(makeOutput(0, "stderr", "f 🎉\r\n"));
    assert.deepEqual(writes, [
      ["out", "hal"],
      ["out", "f 🎉\r\n"],
    ]);
  });

  it("writes the runner's lines to stderr, one per line, and nothing for events a person need not see", () => {
    const { log, writes } = makeConsole(false);
    for (const event of [SAMPLE_EVENTS["phase-start"], SAMPLE_EVENTS["step-start"], SAMPLE_EVENTS["step-end"]])
      log.sink(event);
    assert.deepEqual(writes, [
      ["err", `${formatEvent(SAMPLE_EVENTS["step-start"])}\n`],
      ["err", `${formatEvent(SAMPLE_EVENTS["step-end"])}\n`],
    ]);
  });

  it("ends an unfinished output line on stdout before the next runner line, and only then", () => {
    const { log, writes } = makeConsole(false);
    log.sink(makeOutput(0, "stdout", "no newline"));
    log.sink(SAMPLE_EVENTS["step-end"]);
    log.sink(makeOutput(1, "stdout", "whole line\n"));
    log.sink(SAMPLE_EVENTS["run-end"]);
    assert.deepEqual(writes, [
      ["out", "no newline"],
      ["out", "\n"],
      ["err", `${formatEvent(SAMPLE_EVENTS["step-end"])}\n`],
      ["out", "whole line\n"],
      ["err", `${formatEvent(SAMPLE_EVENTS["run-end"])}\n`],
    ]);
  });

  it("shows kubectl calls only when asked for them", async () => {
    const quiet = makeConsole(false);
    quiet.log.sink(SAMPLE_EVENTS.kubectl);
    assert.deepEqual(quiet.writes, []);
    const verbose = makeConsole(true);
    verbose.log.sink(SAMPLE_EVENTS.kubectl);
    assert.deepEqual(verbose.writes, [["err", "$ kubectl create -f - -o name\n"]]);
    await verbose.log.close();
  });
});
