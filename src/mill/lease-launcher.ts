// The seam between the mill session and the run path: what the session asks of a lease's run (check at reserve, start at commit, continue it after a restart, clean up a lost one).
import type { SecretPair, TerminalStatusName } from "./mill-messages.js";
import type { SpindleLogLine } from "./log-lines.js";

/** A workflow the mill offers (ReserveSeat, without its ttl). */
export interface LeaseOffer {
  readonly leaseId: string;
  readonly targetEngine: string;
  readonly rawPipelineJson: string;
  readonly rawWorkflowJson: string;
  readonly knot: string;
  readonly rkey: string;
}

/** What `check` made of an offer it can run; handed back to `start`. */
export interface AcceptedOffer {
  readonly offer: LeaseOffer;
  /** The launcher's own plan of the run (opaque to the session). */
  readonly plan: unknown;
}

/** How a run ended, in the mill's words. */
export interface LeaseOutcome {
  readonly status: TerminalStatusName;
  readonly exitCode: number;
  /** The error in words, empty for a success. */
  readonly error: string;
}

/** A run under way. */
export interface LaunchedLease {
  /** What cleanUp needs after this process is lost (the Job's name and namespace), JSON; stored before the run starts. */
  readonly record: string;
  /** Stops the run (the step, then the Job); `done` then resolves cancelled. Safe to call twice. */
  cancel(reason: string): void;
  /** Resolves once the run is over; never rejects (a bug becomes a failed outcome). */
  readonly done: Promise<LeaseOutcome>;
}

/** What a run tells the session to keep (never a secret), so that a restarted executor can continue it. */
export interface LeaseProgress {
  /** The run's plan (src/run/run-plan.ts), once its settings are made and before its Job is. */
  plan(text: string): void;
  /** A checkpoint (src/run/run-checkpoint.ts, JSON) and how long the lease's log file was (bytes of `onLine`'s lines) where it was taken. */
  checkpoint(text: string, logLength: number): void;
}

/** A run a previous process of this executor left going, as the session kept it. */
export interface LeftRun {
  readonly leaseId: string;
  /** What `start` gave as its record. */
  readonly record: string;
  readonly plan: string;
  /** Its last checkpoint and the lease's log length there; absent: none was taken (the log starts empty). */
  readonly checkpoint?: { readonly text: string; readonly logLength: number };
}

export interface LeaseLauncher {
  /** The engines this executor claims (the snapshot lists them as available). */
  readonly engines: readonly string[];
  /**
   * Whether this executor could ever run the offer: the engine, the pipeline record and workflow, the image allowed
   * by the limits, the architecture. Quick (no cluster call); `reason` in words when it never could.
   */
  check(
    offer: LeaseOffer,
  ): Promise<{ readonly ok: true; readonly accepted: AcceptedOffer } | { readonly ok: false; readonly reason: string }>;
  /** Starts the run with the commit's secrets (memory only); `onLine` gets each masked log line as it happens. */
  start(
    accepted: AcceptedOffer,
    secrets: readonly SecretPair[],
    onLine: (line: SpindleLogLine) => void,
    progress: LeaseProgress,
  ): LaunchedLease;
  /**
   * Continues a run a previous process left (its Job and pod found again, its secrets read back from the pod):
   * `onLine` gets the lines after the checkpoint's place (the session cut the lease's log file to it). When its Job
   * or pod is gone, `done` resolves failed, runner-lost, saying what was found.
   */
  resume(left: LeftRun, onLine: (line: SpindleLogLine) => void, progress: LeaseProgress): LaunchedLease;
  /**
   * Cleans up after a run a previous process lost or will not continue: deletes its Job and its files on this host;
   * resolves whatever happened (it says so through warn).
   */
  cleanUp(leaseId: string, record: string): Promise<void>;
}
