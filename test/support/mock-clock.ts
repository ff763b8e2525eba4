// Node's mocked timers and clock for a test whose verdict rests on time, with a timers/promises setTimeout that works.
import assert from "node:assert/strict";
import { syncBuiltinESMExports } from "node:module";
import type { TestContext } from "node:test";
import timersPromises from "node:timers/promises";
import { settle } from "./settle.js";

type Sleep = typeof timersPromises.setTimeout;

/**
 * Mocks setTimeout and Date (starting at `now`) until the test ends. Node 20's own mock of timers/promises' setTimeout
 * fires early or never once a test has ticked, so it is replaced by one on the mocked global setTimeout.
 */
export function mockClock(t: TestContext, now = 0): void {
  const real = timersPromises.setTimeout;
  t.mock.timers.enable({ apis: ["setTimeout", "Date"], now });
  const sleep = <T>(ms?: number, value?: T, options: { signal?: AbortSignal } = {}): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const { signal } = options;
      const abort = (): void => {
        clearTimeout(timer);
        reject(new DOMException("The operation was aborted", "AbortError"));
      };
      if (signal?.aborted) return abort();
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", abort);
        resolve(value as T);
      }, ms);
      signal?.addEventListener("abort", abort, { once: true });
    });
  (timersPromises as { setTimeout: Sleep }).setTimeout = sleep as Sleep;
  syncBuiltinESMExports();
  t.after(() => {
    (timersPromises as { setTimeout: Sleep }).setTimeout = real;
    syncBuiltinESMExports();
  });
}

/** Settles `work` on the mocked clock, `stepMs` at a time, letting what each tick started finish before the next. */
export async function driveClock<T>(t: TestContext, work: Promise<T>, limitMs = 10_000, stepMs = 5): Promise<T> {
  let outcome: { value: T } | { error: unknown } | undefined;
  work.then(
    (value) => (outcome = { value }),
    (error: unknown) => (outcome = { error }),
  );
  for (let ms = 0; outcome === undefined && ms < limitMs; ms += stepMs) {
    await settle();
    t.mock.timers.tick(stepMs);
  }
  await settle();
  if (outcome === undefined) assert.fail(`not settled within ${limitMs} ms of the mocked clock`);
  if ("error" in outcome) throw outcome.error;
  return outcome.value;
}
