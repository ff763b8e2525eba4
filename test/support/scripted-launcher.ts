// A LeaseLauncher for the mill session's tests: engines and images it refuses, runs a test ends by hand, and a record of every call.
import type {
  AcceptedOffer,
  LaunchedLease,
  LeaseLauncher,
  LeaseOffer,
  LeaseOutcome,
} from "../../src/mill/lease-launcher.js";
import type { SpindleLogLine } from "../../src/mill/log-lines.js";
import type { SecretPair } from "../../src/mill/mill-messages.js";

/** One run the scripted launcher started: the test writes its lines and ends it. */
export interface ScriptedRun {
  readonly leaseId: string;
  readonly secrets: readonly SecretPair[];
  readonly cancelReasons: string[];
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
  ): LaunchedLease {
    let finish!: (outcome: LeaseOutcome) => void;
    const done = new Promise<LeaseOutcome>((resolve) => (finish = resolve));
    const leaseId = accepted.offer.leaseId;
    const run: ScriptedRun = {
      leaseId,
      secrets,
      cancelReasons: [],
      line: (content, stepId = 0) =>
        onLine({ kind: "data", content, time: new Date().toISOString(), step_id: stepId, stream: "stdout" }),
      finish: (outcome) => finish(outcome),
    };
    this.runs.set(leaseId, run);
    return {
      record: JSON.stringify({ leaseId }),
      cancel: (reason) => {
        run.cancelReasons.push(reason);
        if (this.stopsOnCancel) finish({ status: "cancelled", exitCode: -1, error: reason });
      },
      done,
    };
  }

  async cleanUp(record: string): Promise<void> {
    this.cleanedUp.push(record);
  }
}
