// Parses human durations such as 90s, 10m, 1h30m into milliseconds.
import { InputError } from "./errors.js";

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
const PART = /(\d+)(ms|s|m|h)/gy;

/** Returns milliseconds, or undefined when `text` is not a positive duration like `90s`, `10m`, `1h30m`, `500ms`. */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  PART.lastIndex = 0;
  let total = 0;
  let consumed = 0;
  for (let match = PART.exec(trimmed); match; match = PART.exec(trimmed)) {
    total += Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
    consumed = PART.lastIndex;
  }
  if (consumed !== trimmed.length || total <= 0 || !Number.isSafeInteger(total)) return undefined;
  return total;
}

/** Formats milliseconds for people: 850ms, 12.3s, 4m05s, 1h02m. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const totalSeconds = Math.round(ms / 1000);
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = totalSeconds % 60;
  if (hours > 0) return `${hours}h${String(minutes).padStart(2, "0")}m`;
  return `${minutes}m${String(seconds).padStart(2, "0")}s`;
}

/** A week: longer budgets are surely mistakes (and node's timers overflow past 24.8 days). */
export const MAX_DURATION_MS = 7 * 24 * 3_600_000;

/** Parses a duration of at most a week or throws InputError naming `what` (a flag, or `file:line:col: key`). */
export function readDuration(text: string, what: string): number {
  const ms = parseDuration(text);
  if (ms === undefined) throw new InputError(`${what} expects a duration such as 90s, 10m or 1h, got "${text}"`);
  if (ms > MAX_DURATION_MS) throw new InputError(`${what} expects at most 168h, got "${text}"`);
  return ms;
}
