// Decides where a run that re-attached goes on from: its checkpoint checked against what its pod shows (pure).
import type { PodRunState } from "../pod/pod-run-state.js";
import { buildSkippedStep, type StepRecord } from "./run-result.js";
import type { RunCheckpoint } from "./run-checkpoint.js";

export type ResumeDecision =
  | { readonly kind: "lost"; readonly message: string }
  | { readonly kind: "continue"; readonly from: RunCheckpoint; readonly where: string };

export interface ResumeInput {
  /** The run's checkpoint; undefined for an adopter, which has none of the other host's. */
  readonly checkpoint: RunCheckpoint | undefined;
  readonly state: PodRunState;
  readonly runId: string;
  readonly stepNames: readonly string[];
  /** The names of the run's secrets (the plan's) and how many of them the pod gave back. */
  readonly secretNames: readonly string[];
  readonly secretsRead: number;
  readonly limitBytes: number;
  readonly now: Date;
}

/**
 * Where the run continues, or why it cannot: a pod without the run's files, a step the runner followed that the pod
 * never started, secrets the steps still need that the pod does not hold (they were only in the stopped runner's
 * memory when it stopped before delivering them).
 */
export function planResume(input: ResumeInput): ResumeDecision {
  const { checkpoint, state } = input;
  const from = checkpoint ?? synthesizeCheckpoint(input);
  if (typeof from === "string") return { kind: "lost", message: from };
  // Killed during the pod's wait or the upload: the upload is made again (it overwrites what half arrived).
  const phase = from.phase === "setup" ? "upload" : from.phase;
  const needsSecrets = input.secretNames.length > 0 && (phase === "upload" || phase === "restore" || phase === "steps");
  if (needsSecrets && input.secretsRead < input.secretNames.length)
    return {
      kind: "lost",
      message:
        phase === "upload"
          ? "its secrets had not all reached the pod, and they were only in the stopped runner's memory"
          : `its pod no longer holds the run's secrets (${input.secretsRead} of ${input.secretNames.length} found), which its remaining steps need`,
    };
  if (phase !== "upload" && !state.uploaded)
    return { kind: "lost", message: "its pod does not hold the run's files (the upload's receipt is missing)" };
  const step = from.step;
  if (phase === "steps" && step?.offsets && !state.steps.has(step.index))
    return { kind: "lost", message: `step ${step.index + 1} was followed but never started in the pod` };
  return { kind: "continue", from: { ...from, phase }, where: describeWhere({ ...from, phase }, state) };
}

/** A checkpoint from the pod's state alone (an adopter's case), or why the run cannot go on. */
function synthesizeCheckpoint(input: ResumeInput): RunCheckpoint | string {
  const { state } = input;
  if (!state.uploaded) return "its pod never got the run's files (the upload had not ended), and no checkpoint says more";
  const steps: StepRecord[] = input.stepNames.map((name) => buildSkippedStep(name));
  let status: RunCheckpoint["status"] = "success";
  let current: RunCheckpoint["step"] = null;
  for (const [index, name] of input.stepNames.entries()) {
    const seen = state.steps.get(index);
    if (seen?.kind === "exit") {
      steps[index] = {
        name,
        status: seen.code === 0 ? "success" : "failed",
        exitCode: seen.code,
        startedAt: null,
        finishedAt: null,
        durationMs: 0,
        timedOut: false,
      };
      if (seen.code !== 0) {
        status = "failed";
        break;
      }
      continue;
    }
    if (seen?.kind === "killed") return `step ${index + 1} was killed in the pod (a timeout or a cancel the stopped runner began)`;
    // Running, or not started yet: started (again: `run` is idempotent) and followed from its first byte.
    current = { index, startedAt: input.now.toISOString(), offsets: null };
    break;
  }
  return {
    version: 1,
    runId: input.runId,
    startedAt: input.now.toISOString(),
    namespace: null,
    pod: null,
    capacity: null,
    podWaitMs: null,
    phase: current ? "steps" : "outputs",
    status,
    steps,
    step: current,
    caches: null,
    cachesSaved: 0,
    outputs: null,
    artifacts: [],
    logCounts: { limitBytes: input.limitBytes, keptBytes: 0, droppedBytes: 0 },
    logs: { runLog: 0, ndjson: 0 },
  };
}

function describeWhere(from: RunCheckpoint, state: PodRunState): string {
  if (from.phase !== "steps" || !from.step) return `in its ${from.phase} phase`;
  const seen = state.steps.get(from.step.index);
  const inPod = seen === undefined ? "not started yet" : seen.kind === "exit" ? `exited ${seen.code}` : seen.kind;
  const at = from.step.offsets ? `, following it from byte ${from.step.offsets.stdout}/${from.step.offsets.stderr}` : "";
  return `at step ${from.step.index + 1} (in the pod: ${inPod}${at})`;
}
