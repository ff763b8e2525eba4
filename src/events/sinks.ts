// The three consumers of the event stream: the console, run.log (human, timestamped) and log.ndjson.
import { createWriteStream, type WriteStream } from "node:fs";
import { once } from "node:events";
import type { RunEvent, RunEventSink } from "./run-events.js";
import { formatEvent } from "./format-event.js";

export interface ClosableSink {
  readonly sink: RunEventSink;
  /** Flushes and closes; resolves when everything written is on disk. */
  close(): Promise<void>;
}

/** Splits streamed output into whole lines per step and stream, keeping the unfinished tail. */
class LineBuffer {
  readonly #tails = new Map<string, string>();

  /** Returns the complete lines in `text` (with what was held back before). */
  push(key: string, text: string): string[] {
    const joined = (this.#tails.get(key) ?? "") + text;
    const lines = joined.split("\n");
    this.#tails.set(key, lines.pop()!);
    return lines;
  }

  /** Returns and forgets every unfinished line whose key starts with `prefix`. */
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

async function closeStream(stream: WriteStream): Promise<void> {
  stream.end();
  await once(stream, "close");
}

/** run.log: every line timestamped; step output as `[step N stdout] line`. */
export function createHumanLogSink(path: string, options: { kubectlCalls: boolean }): ClosableSink {
  const file = createWriteStream(path, { flags: "w" });
  const lines = new LineBuffer();
  const write = (time: string, text: string): void => {
    for (const line of text.split("\n")) file.write(`${time} ${line}\n`);
  };
  return {
    sink(event: RunEvent) {
      if (event.kind === "step-output") {
        for (const line of lines.push(`${event.index}/${event.stream}`, event.text)) write(event.time, `[step ${event.index + 1} ${event.stream}] ${line}`);
        return;
      }
      if (event.kind === "step-end") {
        for (const [key, tail] of lines.flush(`${event.index}/`)) write(event.time, `[step ${event.index + 1} ${key.split("/")[1]}] ${tail}`);
      }
      if (event.kind === "kubectl" && !options.kubectlCalls) return;
      const text = formatEvent(event);
      if (text !== undefined) write(event.time, text);
    },
    close: () => closeStream(file),
  };
}

/** log.ndjson: control lines (step start/end; runner phases as step -1) and data lines (output, runner messages). */
export function createNdjsonLogSink(path: string): ClosableSink {
  const file = createWriteStream(path, { flags: "w" });
  const write = (line: object): void => void file.write(`${JSON.stringify(line)}\n`);
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
    close: () => closeStream(file),
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
