// Reads the warm-capacity options (--keep-warm, --for, --count, --max-warm) into typed values, refusing bad input.
import { readDuration } from "../core/duration.js";
import { InputError } from "../core/errors.js";

/** The most placeholders --max-warm and --count accept: each one is a node billed while it waits. */
export const MAX_WARM_LIMIT = 50;

/** A duration flag in whole seconds (a placeholder's activeDeadlineSeconds), at least one. */
export function readWarmSeconds(text: string, flag: string): number {
  return Math.max(1, Math.ceil(readDuration(text, flag) / 1000));
}

/** A count flag: an integer from 1 to MAX_WARM_LIMIT. */
export function readWarmCount(text: string, flag: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > MAX_WARM_LIMIT)
    throw new InputError(`${flag} expects a whole number from 1 to ${MAX_WARM_LIMIT}, got "${text}"`);
  return n;
}

/** `run --keep-warm DUR [--max-warm N]` as the executor settings take it; nothing when --keep-warm is absent. */
export function readKeepWarm(
  keepWarm: string | undefined,
  maxWarm: string | undefined,
): { keepWarm?: { seconds: number; maxWarm: number } } {
  const max = readWarmCount(maxWarm ?? "1", "--max-warm");
  if (keepWarm === undefined) return {};
  return { keepWarm: { seconds: readWarmSeconds(keepWarm, "--keep-warm"), maxWarm: max } };
}
