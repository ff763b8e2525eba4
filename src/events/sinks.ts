// The three consumers of the event stream: the console, run.log (human, timestamped) and log.ndjson.
import { isClusterCall, type RunEvent, type RunEventSink } from "./run-events.js";
import { formatEvent } from "./format-event.js";
import { LogFile, type LogWriteError } from "./log-file.js";

export { LogWriteError } from "./log-file.js";

export interface ClosableSink {
  readonly sink: RunEventSink;
  /**
   * Flushes and closes; resolves when everything written is on disk. Rejects with the first write error of a
   * file sink (one that could not be created or filled): the sink stops writing at that error, without ever
   * throwing into the run, so a full disk cannot stop a run before its Job is deleted.
   */
  close(): Promise<void>;
  /** For a process about to exit from a crash: writes everything so far, unfinished lines included, and closes. Never throws. */
  closeSync(): void;
  /** A file sink's place, for a checkpoint (src/run/checkpointer.ts); absent for the console. */
  readonly file?: LogFileProgress;
}

/** Where a log file is: what a checkpoint records of it, and waits for. */
export interface LogFileProgress {
  /** The file's length once what the sink has taken so far is written. */
  queuedLength(): number;
  /** True while the sink holds text it has not queued yet (an unfinished line of output): no length says where it is. */
  holding(): boolean;
  /** Resolves with true once the file holds `length` bytes; false when it failed or was closed first. */
  whenWritten(length: number): Promise<boolean>;
}

/** What every line of step output starts with in run.log, under its header: two bytes, not a timestamp per line. */
export const OUTPUT_INDENT = "  ";
/** A new header comes at least this often in a run of output, so every output line happened within this of its header's time. */
export const HEADER_EVERY_MS = 1000;

/** Splits streamed output into whole lines per step and stream, keeping the unfinished tail. */
class LineBuffer {
  readonly #tails = new Map<string, string>();

  /** True while an unfinished line is held. */
  get holding(): boolean {
    for (const tail of this.#tails.values()) if (tail !== "") return true;
    return false;
  }

  /** The complete lines in `text` (with what was held back before), indented, one per line; undefined when there is none yet. */
  push(key: string, text: string): string | undefined {
    const end = text.lastIndexOf("\n");
    const tail = this.#tails.get(key) ?? "";
    if (end < 0) {
      this.#tails.set(key, tail + text);
      return undefined;
    }
    this.#tails.set(key, text.slice(end + 1));
    return indentLines(tail + text.slice(0, end));
  }

  /** Returns and forgets every unfinished line, indented, with its key. */
  flush(): Array<[string, string]> {
    const rest: Array<[string, string]> = [];
    for (const [key, tail] of this.#tails) if (tail !== "") rest.push([key, indentLines(tail)]);
    this.#tails.clear();
    return rest;
  }
}

/**
 * `lines` (ended by \n but for the last) indented as run.log holds output, each ended by \n. A \r\n line ending reads
 * as one line end in the log; a \r inside the line (a progress bar) is kept.
 */
function indentLines(lines: string): string {
  return `${OUTPUT_INDENT}${lines.replace(/\r?\n/g, `\n${OUTPUT_INDENT}`).replace(/\r$/, "")}\n`;
}

/**
 * run.log, for people: every runner line starts with its time; step output comes in groups, a header line with the
 * time, step and stream (`<time> [step 2 stdout]`), then the output lines as they were printed, each indented by
 * two spaces. A group ends when the step or stream changes, when a runner line comes between (a line of output
 * unfinished by then is written first, so each runner line stands where it happened), and after HEADER_EVERY_MS, so
 * a header's time is never more than a second before the lines under it. For short lines the file is a few percent
 * larger than the output, where a timestamp and stream on every line had doubled it.
 */
export function createHumanLogSink(
  path: string,
  options: { clusterCalls: boolean; onWriteFailure?: (error: LogWriteError) => void; resumeAt?: number },
): ClosableSink {
  const file = new LogFile(path, {
    onFailure: options.onWriteFailure,
    ...(options.resumeAt === undefined ? {} : { resumeAt: options.resumeAt }),
  });
  const lines = new LineBuffer();
  let lastTime = "";
  /** The current group of output lines: its step/stream key and when its header said it began. */
  let group: { key: string; at: number } | undefined;
  const writeOutput = (time: string, key: string, text: string): void => {
    const at = Date.parse(time);
    if (group === undefined || group.key !== key || at - group.at >= HEADER_EVERY_MS) {
      const [index, stream] = key.split("/");
      file.write(`${time} [step ${Number(index) + 1} ${stream}]\n`);
      group = { key, at };
    }
    file.write(text);
  };
  const writeTails = (time: string): void => {
    for (const [key, tail] of lines.flush()) writeOutput(time, key, tail);
  };
  const writeRunnerLine = (time: string, text: string): void => {
    writeTails(time);
    group = undefined;
    for (const line of text.split("\n")) file.write(`${time} ${line}\n`);
  };
  return {
    sink(event: RunEvent) {
      lastTime = event.time;
      if (event.kind === "step-output") {
        const key = `${event.index}/${event.stream}`;
        const complete = lines.push(key, event.text);
        if (complete !== undefined) writeOutput(event.time, key, complete);
        return;
      }
      // Every runner line written (a step's end, the run's end under a step that never ended) first writes the unfinished output lines.
      if (isClusterCall(event) && !options.clusterCalls) return;
      const text = formatEvent(event);
      if (text !== undefined) writeRunnerLine(event.time, text);
    },
    close: () => {
      writeTails(lastTime); // output of a step that never ended (an embedder stopped early)
      return file.close();
    },
    closeSync: () => {
      writeTails(lastTime);
      file.flushSync();
      file.closeSync();
    },
    file: {
      queuedLength: () => file.queuedLength,
      holding: () => lines.holding,
      whenWritten: (length) => file.whenWritten(length),
    },
  };
}

/**
 * One event as a line of log.ndjson, or undefined for an event the log leaves out: control lines (step start/end;
 * runner phases as step -1) and data lines (output, runner messages). `serve` streams the same lines.
 */
export function toLogLine(event: RunEvent): object | undefined {
  const { time } = event;
  switch (event.kind) {
    case "step-start":
      return {
        time,
        kind: "control",
        step: event.index,
        status: "start",
        stepKind: "user",
        name: event.name,
        command: event.command,
      };
    case "step-end":
      return {
        time,
        kind: "control",
        step: event.index,
        status: "end",
        stepKind: "user",
        name: event.name,
        stepStatus: event.status,
        exitCode: event.exitCode,
        durationMs: event.durationMs,
        timedOut: event.timedOut,
      };
    case "step-output":
      return { time, kind: "data", step: event.index, stream: event.stream, content: event.text };
    case "phase-start":
      return { time, kind: "control", step: -1, status: "start", stepKind: "system", name: event.phase };
    case "phase-end":
      return {
        time,
        kind: "control",
        step: -1,
        status: "end",
        stepKind: "system",
        name: event.phase,
        ok: event.ok,
        durationMs: event.durationMs,
        detail: event.detail,
      };
    case "cache-restore":
    case "cache-save":
    case "artifact": {
      // The figures as fields too, for tools that read the log: the content line is for people.
      const { time: _time, kind, ...fields } = event;
      return {
        time,
        kind: "data",
        step: -1,
        stream: "system",
        content: formatEvent(event),
        event: kind,
        [kind === "artifact" ? "artifact" : "cache"]: fields,
      };
    }
    default: {
      const content = formatEvent(event);
      return content === undefined
        ? undefined
        : { time, kind: "data", step: -1, stream: "system", content, event: event.kind };
    }
  }
}

/** What `event` adds to log.ndjson (its line and a newline), or undefined for an event the log leaves out. */
export function formatNdjsonLine(event: RunEvent): string | undefined {
  const line = toLogLine(event);
  return line === undefined ? undefined : `${JSON.stringify(line)}\n`;
}

/**
 * log.ndjson: one toLogLine per event. Each line is handed to the file system as soon as the one before is in;
 * `onWritten` is told the file's length each time more whole lines are in it (serve's log followers read up to it).
 */
export function createNdjsonLogSink(
  path: string,
  options: {
    onWritten?: (length: number) => void;
    onWriteFailure?: (error: LogWriteError) => void;
    resumeAt?: number;
  } = {},
): ClosableSink {
  const file = new LogFile(path, {
    onWritten: options.onWritten,
    onFailure: options.onWriteFailure,
    ...(options.resumeAt === undefined ? {} : { resumeAt: options.resumeAt }),
  });
  return {
    sink(event: RunEvent) {
      const line = formatNdjsonLine(event);
      if (line !== undefined) file.write(line);
    },
    close: () => file.close(),
    closeSync: () => {
      file.flushSync();
      file.closeSync();
    },
    file: {
      queuedLength: () => file.queuedLength,
      holding: () => false,
      whenWritten: (length) => file.whenWritten(length),
    },
  };
}

/** The console: runner lines on stderr, step output live on stdout as it arrives. */
export function createConsoleSink(
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
  options: { clusterCalls: boolean },
): ClosableSink {
  let lastOutputEndedLine = true;
  return {
    sink(event: RunEvent) {
      if (event.kind === "step-output") {
        out.write(event.text);
        lastOutputEndedLine = event.text.endsWith("\n");
        return;
      }
      if (isClusterCall(event) && !options.clusterCalls) return;
      const text = formatEvent(event);
      if (text === undefined) return;
      if (!lastOutputEndedLine) {
        out.write("\n");
        lastOutputEndedLine = true;
      }
      err.write(`${text}\n`);
    },
    close: async () => {},
    closeSync: () => {},
  };
}
