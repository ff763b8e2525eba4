// The one retry helper: a bounded budget, backoff between attempts, and a typed final error.
import { setTimeout as sleep } from "node:timers/promises";
import { CancelledError } from "./errors.js";

export interface RetryPolicy {
  /** Give up once this much time has passed since the first attempt (the attempt in flight finishes). */
  readonly budgetMs: number;
  /** At most this many attempts in all. */
  readonly maxAttempts: number;
  /** First delay; doubles each time up to maxDelayMs. */
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
}

/**
 * What an attempt returns: done with a value, or a retryable failure with its reason kept for the final error.
 * `progressed` says the failed attempt still moved the work forward (a resumed stream that delivered bytes):
 * the budget and the attempt count then start again, so only failures in a row can exhaust them.
 */
export type AttemptOutcome<T> =
  | { readonly done: true; readonly value: T }
  | { readonly done: false; readonly reason: string; readonly progressed?: boolean };

/** What a retry spent before it gave up: the failed attempts in a row and the time since the first of them. */
export interface RetrySpent {
  readonly attempts: number;
  readonly elapsedMs: number;
}

/** `gave up after 4 attempts in 12s`: for every final error, so a run's log says which wait gave up and after how long. */
export function describeSpent({ attempts, elapsedMs }: RetrySpent): string {
  const seconds = elapsedMs < 10_000 ? (elapsedMs / 1000).toFixed(1) : String(Math.round(elapsedMs / 1000));
  return `gave up after ${attempts} ${attempts === 1 ? "attempt" : "attempts"} in ${seconds}s`;
}

export interface RetryHooks {
  readonly signal?: AbortSignal;
  /** Told before each wait, with the failure that caused it. */
  readonly onRetry?: (attempt: number, reason: string, delayMs: number) => void;
  /** Builds the error thrown when the budget is spent; gets every failure reason in order, and what was spent. */
  readonly giveUp: (reasons: readonly string[], spent: RetrySpent) => Error;
  /** Injected for tests. */
  readonly now?: () => number;
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Runs `attempt` (numbered from 1) until it is done or the policy's budget is spent. Non-retryable failures are thrown by `attempt` itself. */
export async function retry<T>(
  policy: RetryPolicy,
  hooks: RetryHooks,
  attempt: (n: number) => Promise<AttemptOutcome<T>>,
): Promise<T> {
  const now = hooks.now ?? Date.now;
  const wait =
    hooks.sleep ?? ((ms: number, signal?: AbortSignal) => sleep(ms, undefined, { signal }).then(() => undefined));
  let started = now();
  let inRow = 0;
  const reasons: string[] = [];
  let delay = policy.initialDelayMs;
  for (let n = 1; ; n++) {
    if (hooks.signal?.aborted) throw new CancelledError();
    const outcome = await attempt(n);
    if (outcome.done) return outcome.value;
    reasons.push(outcome.reason);
    inRow += 1;
    if (outcome.progressed) {
      started = now();
      inRow = 1;
      delay = policy.initialDelayMs;
    }
    const elapsed = now() - started;
    if (inRow >= policy.maxAttempts || elapsed + delay > policy.budgetMs)
      throw hooks.giveUp(reasons, { attempts: inRow, elapsedMs: elapsed });
    hooks.onRetry?.(n, outcome.reason, delay);
    try {
      await wait(delay, hooks.signal);
    } catch {
      throw new CancelledError();
    }
    delay = Math.min(delay * 2, policy.maxDelayMs);
  }
}
