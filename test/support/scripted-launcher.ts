// A LeaseLauncher for the mill session's tests: engines and images it refuses, runs a test ends by hand (started or continued after a restart), and a record of every call.
import type {
  AcceptedOffer,
  LaunchedLease,
  LeaseLauncher,
  LeaseOffer,
  LeaseOutcome,
  LeaseProgress,
  LeftRun,
} from "../../src/mill/lease-launcher.js";
import { formatLogLine, type SpindleLogLine } from "../../src/mill/log-lines.js";
import type { SecretPair } from "../../src/mill/mill-messages.js";

/** One run the scripted launcher started: the test writes its lines and ends it. */
export interface ScriptedRun {
  readonly leaseId: string;
  readonly secrets: readonly SecretPair[];
  readonly cancelReasons: string[];
  /** Where the run keeps its plan and checkpoints. */
  readonly progress: LeaseProgress;
  /** What a restart continued it from (absent for a run `start` began). */
  readonly left?: LeftRun;
  /** The bytes of the lease's log file its lines make so far (from the checkpoint's length for a continued run). */
  readonly logBytes: () => number;
  line(content: string, stepId?: number): void;
  finish(outcome: LeaseOutcome): void;
}

export class ScriptedLauncher implements LeaseLauncher {
  readonly engines = ["nixery", "microvm"];
  readonly runs = new Map<string, ScriptedRun>();
  readonly cleanedUp: string[] = [];
  /** Whether a cancelled run stops by itself (else it hangs, and the session's grace must end it). */
  stopsOnCancel = true;

  async check(offer: LeaseOffer): Promise<{ ok: true; accepted: AcceptedOffer } | { ok: false; reason: string }> {
    if (!this.engines.includes(offer.targetEngine))
      return { ok: false, reason: `engine ${offer.targetEngine} is not run here` };
    const image = (JSON.parse(offer.rawWorkflowJson) as { image?: string }).image;
    if (image?.startsWith("forbidden/")) return { ok: false, reason: `image ${image} is not allowed by the limits` };
    return { ok: true, accepted: { offer, plan: {} } };
  }

  start(
    accepted: AcceptedOffer,
    secrets: readonly SecretPair[],
    onLine: (line: SpindleLogLine) => void,
    progress: LeaseProgress,
  ): LaunchedLease {
    return this.#launch(accepted.offer.leaseId, JSON.stringify({ leaseId: accepted.offer.leaseId }), onLine, progress, {
      secrets,
    });
  }

  resume(left: LeftRun, onLine: (line: SpindleLogLine) => void, progress: LeaseProgress): LaunchedLease {
    return this.#launch(left.leaseId, left.record, onLine, progress, { secrets: [], left });
  }

  #launch(
    leaseId: string,
    record: string,
    onLine: (line: SpindleLogLine) => void,
    progress: LeaseProgress,
    extra: { secrets: readonly SecretPair[]; left?: LeftRun },
  ): LaunchedLease {
    let finish!: (outcome: LeaseOutcome) => void;
    const done = new Promise<LeaseOutcome>((resolve) => (finish = resolve));
    let logBytes = extra.left?.checkpoint?.logLength ?? 0;
    const run: ScriptedRun = {
      leaseId,
      secrets: extra.secrets,
      cancelReasons: [],
      progress,
      ...(extra.left ? { left: extra.left } : {}),
      logBytes: () => logBytes,
      line: (content, stepId = 0) => {
        const line: SpindleLogLine = {
          kind: "data",
          content,
          time: new Date().toISOString(),
          step_id: stepId,
          stream: "stdout",
        };
        logBytes += Buffer.byteLength(formatLogLine(line));
        onLine(line);
      },
      finish: (outcome) => finish(outcome),
    };
    this.runs.set(leaseId, run);
    return {
      record,
      cancel: (reason) => {
        run.cancelReasons.push(reason);
        if (this.stopsOnCancel) finish({ status: "cancelled", exitCode: -1, error: reason });
      },
      done,
    };
  }

  async cleanUp(_leaseId: string, record: string): Promise<void> {
    this.cleanedUp.push(record);
  }
}
