// serve's fence for one run: while this instance's Lease is lapsed (or lately regained), the Job's owner is read before each action that changes the run.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import { NotFoundError } from "../cluster/errors.js";
import { InfraError, RunTakenOverError, describeError } from "../core/errors.js";
import { formatDuration } from "../core/duration.js";
import { describeSpent, retry, type AttemptOutcome, type RetryPolicy } from "../core/retry.js";
import { readInstance } from "../manifests/job-annotations.js";
import { describeFencedAction, type FencedAction, type RunFence } from "../run/run-fence.js";

/** What the fence needs of the instance's Lease (LeaseHolder). */
export interface LeaseState {
  readonly held: boolean;
  readonly regainedAt: number | undefined;
  readonly durationMs: number;
}

/** What the fence read of the run's Job: its owner annotation, or that it is gone. */
export type OwnerRead = { readonly kind: "owner"; readonly owner: string | undefined } | { readonly kind: "gone" };

export interface RunFenceOptions {
  readonly runId: string;
  readonly jobName: string;
  /** This instance (`--instance`): the owner the Job must name for the run to go on here. */
  readonly instance: string;
  readonly lease: LeaseState;
  /** One GET of the run's Job (its owner annotation); throws when it cannot be read. */
  readonly readOwner: (signal: AbortSignal) => Promise<OwnerRead>;
  /** How long (and how often) it re-reads a Job it cannot read before giving up (default: waitPolicy(duration)). */
  readonly wait?: RetryPolicy;
  readonly now?: () => number;
  /** Where a wait for an unreadable Job is told (the service's stderr), once per wait. */
  readonly warn: (message: string) => void;
}

/**
 * The wait for a Job the fence cannot read: re-read every third of the Lease's duration (at least 1 s apart), for at
 * most four durations (a minute at the default 15 s), after which the run stops with `ownership-unknown` and its Job
 * is left, never deleted blind.
 */
export function waitPolicy(durationMs: number): RetryPolicy {
  const interval = Math.max(1000, Math.floor(durationMs / 3));
  return { budgetMs: 4 * durationMs, maxAttempts: 1000, initialDelayMs: interval, maxDelayMs: interval };
}

/**
 * Whether the Job's owner must be read before acting: while the Lease is not held, and after it is held again
 * following a lapse until a read made one full duration after that (an adopter that saw it lapsed may still be
 * claiming). A Lease held throughout since the last read (the normal path) needs none: no extra API request. Pure.
 */
export function mustReadOwner(lease: LeaseState, verifiedAt: number): boolean {
  if (!lease.held) return true;
  return lease.regainedAt !== undefined && verifiedAt < lease.regainedAt + lease.durationMs;
}

/** The fence of one run (made when the run starts, re-attaches or is adopted: its ownership verified then). */
export function createRunFence(options: RunFenceOptions): RunFence {
  const now = options.now ?? Date.now;
  let verifiedAt = now();
  return async (action: FencedAction, signal: AbortSignal): Promise<void> => {
    if (!mustReadOwner(options.lease, verifiedAt)) return;
    const what = describeFencedAction(action);
    let told = false;
    const read = await retry(
      options.wait ?? waitPolicy(options.lease.durationMs),
      {
        signal,
        now,
        onRetry: (_n, reason, delayMs) => {
          if (told) return;
          told = true;
          options.warn(
            `run ${options.runId}: this instance's Lease is not held and Job ${options.jobName} cannot be read (${reason}): waiting before ${what} until it can tell which instance owns the run (again in ${formatDuration(delayMs)}); nothing of the run is changed meanwhile`,
          );
        },
        giveUp: (reasons, spent) =>
          new InfraError(
            "ownership-unknown",
            `this instance's Lease lapsed and Job ${options.jobName} could not be read before ${what} (${describeSpent(spent)}; last: ${reasons.at(-1)}): it cannot tell whether another instance took the run over, so it stops driving it and leaves its Job and pod untouched`,
          ),
      },
      async (): Promise<AttemptOutcome<OwnerRead>> => {
        const at = now();
        try {
          const value = await options.readOwner(signal);
          verifiedAt = at;
          return { done: true, value };
        } catch (error) {
          if (signal.aborted) throw error;
          return { done: false, reason: describeError(error) };
        }
      },
    );
    // A Job gone is no one's run to take over: the action goes on and meets that itself (a delete of it is no error).
    if (read.kind === "gone" || read.owner === options.instance) return;
    const by = read.owner === undefined ? "another instance" : `instance ${read.owner}`;
    throw new RunTakenOverError(
      read.owner,
      `run ${options.runId} was adopted by ${by} while this instance's Lease had lapsed (found before ${what}): ${by} drives it from now on and answers for it; this instance stopped driving it and left its Job and pod untouched`,
    );
  };
}

/** Reads the run's Job's owner annotation with one GET (bounded like a Lease call), for createRunFence. */
export function readJobOwner(
  getJob: (signal: AbortSignal, timeoutMs: number) => Promise<IJob>,
  timeoutMs: number,
): (signal: AbortSignal) => Promise<OwnerRead> {
  return async (signal) => {
    try {
      return { kind: "owner", owner: readInstance(await getJob(signal, timeoutMs)) };
    } catch (error) {
      if (error instanceof NotFoundError) return { kind: "gone" };
      throw error;
    }
  };
}
