// Waits for a condition a test expects within milliseconds, failing only when it never comes.
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";

/** Far above the milliseconds the conditions take, so that a busy machine's slow turns cannot fail a test, only a condition that never comes. */
const UNTIL_DEADLINE_MS = 20_000;

/** Resolves once `check()` holds, looking every 5 ms; fails naming `what` after 20 s. */
export async function until(check: () => boolean, what: string): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > UNTIL_DEADLINE_MS) assert.fail(`${what} not within ${UNTIL_DEADLINE_MS / 1000} s`);
    await sleep(5);
  }
}
