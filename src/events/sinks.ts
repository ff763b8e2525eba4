// The three consumers of the event stream: the console, run.log (human, timestamped) and log.ndjson.
import type { RunEvent, RunEventSink } from "./run-events.js";
import { formatEvent } from "./format-event.js";
import { LogFile } from "./log-file.js";

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
}

/** Splits streamed output into whole lines per step and stream, keeping the unfinished tail. */
class LineBuffer {
  readonly #tails = new Map<string, string>();

  /** Returns the complete lines in `text` (with what was held back before). */
  push(key: string, text: string): string[] {
    const joined = (this.#tails.get(key) ?? "") + text;
    const lines = joined.split("\n");
    this.#tails.set(key, lines.pop()!);
    // A \r\n line ending reads as one line end in the log; a \r inside the line (a progress bar) is kept.
    return lines.map((line) => (line.endsWith("\r") ? line.slice(0, -1) : line));
  }

  /** Returns and forgets every unfinished line whose key starts with `prefix` ("" for all of them). */
  flush(prefix: string): Array<[string, string]> {
    const rest: Array<[string, string]> = [];
    for (const [key, tail] of this.#tails) {
      if (!key.startsWith(prefix)) continue;
      if (tail !== "") rest.push([key, tail]);
      this.#tails.delete(key);
    }
    return rest;
  }
}

/** run.log: every line timestamped; step output as `[step N stdout] line`. */
export function createHumanLogSink(path: string, options: { kubectlCalls: boolean }): ClosableSink {
  const file = new LogFile(path);
  const lines = new LineBuffer();
  let lastTime = "";
  const write = (time: string, text: string): void => {
    for (const line of text.split("\n")) file.write(`${time} ${line}\n`);
  };
  const writeTails = (time: string, prefix: string): void => {
    for (const [key, tail] of lines.flush(prefix)) {
      const [index, stream] = key.split("/");
      write(time, `[step ${Number(index) + 1} ${stream}] ${tail}`);
    }
  };
  return {
    sink(event: RunEvent) {
      lastTime = event.time;
      if (event.kind === "step-output") {
        for (const line of lines.push(`${event.index}/${event.stream}`, event.text)) write(event.time, `[step ${event.index + 1} ${event.stream}] ${line}`);
        return;
      }
      if (event.kind === "step-end") {
        writeTails(event.time, `${event.index}/`);
      }
      // The run is over: output of a step that never ended (a crash, an exit at once) goes before the summary.
      if (event.kind === "run-end") writeTails(event.time, "");
      if (event.kind === "kubectl" && !options.kubectlCalls) return;
      const text = formatEvent(event);
      if (text !== undefined) write(event.time, text);
    },
    close: () => {
      writeTails(lastTime, ""); // output of a step that never ended (an embedder stopped early)
      return file.close();
    },
    closeSync: () => {
      writeTails(lastTime, "");
      file.flushSync();
      file.closeSync();
    },
  };
}

/** log.ndjson: control lines (step start/end; runner phases as step -1) and data lines (output, runner messages). */
export function createNdjsonLogSink(path: string): ClosableSink {
  const file = new LogFile(path);
  const write = (line: object): void => file.write(`${JSON.stringify(line)}\n`);
  return {
    sink(event: RunEvent) {
      const { time } = event;
      switch (event.kind) {
        case "step-start":
          return write({ time, kind: "control", step: event.index, status: "start", stepKind: "user", name: event.name, command: event.command });
        case "step-end":
          return write({ time, kind: "control", step: event.index, status: "end", stepKind: "user", name: event.name, stepStatus: event.status, exitCode: event.exitCode, durationMs: event.durationMs, timedOut: event.timedOut });
        case "step-output":
          return write({ time, kind: "data", step: event.index, stream: event.stream, content: event.text });
        case "phase-start":
          return write({ time, kind: "control", step: -1, status: "start", stepKind: "system", name: event.phase });
        case "phase-end":
          return write({ time, kind: "control", step: -1, status: "end", stepKind: "system", name: event.phase, ok: event.ok, durationMs: event.durationMs, detail: event.detail });
        default: {
          const content = formatEvent(event);
          if (content !== undefined) write({ time, kind: "data", step: -1, stream: "system", content, event: event.kind });
        }
      }
    },
    close: () => file.close(),
    closeSync: () => {
      file.flushSync();
      file.closeSync();
    },
  };
}

/** The console: runner lines on stderr, step output live on stdout as it arrives. */
export function createConsoleSink(out: NodeJS.WritableStream, err: NodeJS.WritableStream, options: { kubectlCalls: boolean }): ClosableSink {
  let lastOutputEndedLine = true;
  return {
    sink(event: RunEvent) {
      if (event.kind === "step-output") {
        out.write(event.text);
        lastOutputEndedLine = event.text.endsWith("\n");
        return;
      }
      if (event.kind === "kubectl" && !options.kubectlCalls) return;
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
