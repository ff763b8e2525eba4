// The end of a program's message, bounded: what an error quotes of git's stderr without quoting megabytes of it.

/** At most this many of the last lines of a quoted message. */
export const TAIL_MAX_LINES = 40;
/** At most this many of its last characters. */
export const TAIL_MAX_CHARS = 4096;

/**
 * The last lines of `text` (trimmed), at most TAIL_MAX_LINES of them and TAIL_MAX_CHARS characters, marked with
 * `[...]` where the start was cut: git's reason is often a line above its last one ("fatal: ..." after hints).
 */
export function tailText(text: string): string {
  const lines = text.trim().split(/\r?\n/);
  let tail = lines.slice(-TAIL_MAX_LINES).join("\n");
  let cut = lines.length > TAIL_MAX_LINES;
  if (tail.length > TAIL_MAX_CHARS) {
    tail = tail.slice(-TAIL_MAX_CHARS);
    cut = true;
  }
  return cut ? `[...]\n${tail}` : tail;
}
