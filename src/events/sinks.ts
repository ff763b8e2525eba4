// The three consumers of the event stream: the console, run.log (human, timestamped) and log.ndjson.
import { createWriteStream } from "node:fs";
import type { RunEvent, RunEventSink } from "./run-events.js";
import { formatEvent } from "./format-event.js";

export interface ClosableSink {
  readonly sink: RunEventSink;
  /**
   * Flushes and closes; resolves when everything written is on disk. Rejects with the first write error of a
   * file sink (one that could not be created or filled): the sink stops writing at that error, without ever
   * throwing into the run, so a full disk cannot stop a run before its Job is deleted.
   */
  close(): Promise<void>;
}

/** A log file's first failure, with the file it happened to. */
export class LogWriteError extends Error {
  override readonly name = "LogWriteError";
  /** The system error code (ENOENT, EISDIR, ENOSPC, ...). */
  readonly code: string | undefined;

  constructor(
    readonly path: string,
    cause: NodeJS.ErrnoException,
  ) {
    super(`cannot write ${path}: ${cause.message}`, { cause });
    this.code = cause.code;
  }
}

/** A file written line by line that never throws: after its first error it drops writes, and close reports it. */
function openLogFile(path: string): { write(text: string): void; close(): Promise<void> } {
  const file = createWriteStream(path, { flags: "w" });
  let failure: NodeJS.ErrnoException | undefined;
  // Listened to from the start: an unhandled 'error' (no such dir, EISDIR, ENOSPC mid-run) would end the process.
  file.on("error", (error: NodeJS.ErrnoException) => (failure ??= error));
  // Not events.once: it rejects on an "error" first, and nobody may be awaiting yet.
  const closed = new Promise<void>((resolve) => file.once("close", () => resolve()));
  return {
    write(text) {
      if (failure === undefined && !file.destroyed) file.write(text);
    },
    async close() {
      if (!file.destroyed) file.end();
      await closed;
      if (failure) throw new LogWriteError(path, failure);
    },
  };
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
  const file = openLogFile(path);
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
      if (event.kind === "kubectl" && !options.kubectlCalls) return;
      const text = formatEvent(event);
      if (text !== undefined) write(event.time, text);
    },
    close: () => {
      writeTails(lastTime, ""); // output of a step that never ended (an embedder stopped early)
      return file.close();
    },
  };
}

/** log.ndjson: control lines (step start/end; runner phases as step -1) and data lines (output, runner messages). */
export function createNdjsonLogSink(path: string): ClosableSink {
  const file = openLogFile(path);
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
  };
}
