// Bounds the step output a run keeps: one transform between the run's events and its sinks, so every log holds the same.
import type { RunEvent, RunEventSink } from "./run-events.js";

/** The step output a run keeps when nothing else is said: 64 MiB. */
export const DEFAULT_MAX_LOG_BYTES = 64 * 1024 * 1024;

/** What the logs kept of the steps' output (UTF-8 bytes of the text, before any log's own framing). */
export interface LogCounts {
  /** The budget: most bytes of step output the logs keep. */
  readonly limitBytes: number;
  readonly keptBytes: number;
  /** Step output that arrived past the budget, read and counted but written nowhere. */
  readonly droppedBytes: number;
}

/**
 * A budget of step output for one run. `through(next)` gives the sink to emit into: every event passes to `next`
 * unchanged until the step output so far reaches `limitBytes`; the event that crosses it is cut at the last whole
 * character that fits, followed by one warning notice; later step output is counted and dropped, and every other
 * event still passes. It drops nothing upstream (the steps are read as fast as before, never slowed or stopped).
 * Chains compose: a secret mask that must see the text first wraps the budget's sink (`mask.through(budget.through(sinks))`).
 */
export interface OutputBudget {
  /** The budget's sink in front of `next`; one budget counts one chain, so call it once. */
  through(next: RunEventSink): RunEventSink;
  /** The counts so far (final once the run's last step output has passed). */
  counts(): LogCounts;
}

/** `from`: the counts a run that re-attached had reached (its checkpoint's), to count on from. */
export function createOutputBudget(limitBytes: number, from?: LogCounts): OutputBudget {
  if (!Number.isSafeInteger(limitBytes) || limitBytes < 0)
    throw new RangeError(`the log limit must be a whole number of bytes >= 0, got ${limitBytes}`);
  let keptBytes = from?.keptBytes ?? 0;
  let droppedBytes = from?.droppedBytes ?? 0;
  let full = keptBytes >= limitBytes && from !== undefined;
  return {
    through: (next) => (event: RunEvent) => {
      if (event.kind === "notice" && event.podDroppedBytes !== undefined) droppedBytes += event.podDroppedBytes;
      if (event.kind !== "step-output") return next(event);
      const bytes = Buffer.byteLength(event.text, "utf8");
      if (full) {
        droppedBytes += bytes;
        return;
      }
      if (keptBytes + bytes <= limitBytes) {
        keptBytes += bytes;
        return next(event);
      }
      full = true;
      const head = cutToBytes(event.text, limitBytes - keptBytes);
      const headBytes = Buffer.byteLength(head, "utf8");
      keptBytes += headBytes;
      droppedBytes += bytes - headBytes;
      if (head !== "") next({ ...event, text: head });
      next({
        time: event.time,
        kind: "notice",
        level: "warning",
        message: describeLimitReached(limitBytes, event.index, event.stream),
      });
    },
    counts: () => ({ limitBytes, keptBytes, droppedBytes }),
  };
}

/** The longest start of `text` made of whole characters whose UTF-8 encoding takes at most `maxBytes`. */
export function cutToBytes(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end -= 1; // back off the continuation bytes of a cut character
  return bytes.subarray(0, end).toString("utf8");
}

function describeLimitReached(limitBytes: number, index: number, stream: "stdout" | "stderr"): string {
  return (
    `step output reached the log limit of ${formatBytes(limitBytes)} in step ${index + 1}'s ${stream}: the rest of the run's step output ` +
    "is not kept in the logs (the steps go on running); result.json's logs.droppedBytes counts what was left out"
  );
}

/** 67108864 → "64 MiB (67108864 bytes)"; a count that is no whole KiB or MiB stays bytes. */
function formatBytes(bytes: number): string {
  for (const [unit, size] of [
    ["GiB", 1024 ** 3],
    ["MiB", 1024 ** 2],
    ["KiB", 1024],
  ] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size} ${unit} (${bytes} bytes)`;
  }
  return `${bytes} bytes`;
}
