// Which serve instance owns a run, and what another instance needs to continue it: the Job annotations written at create and read by an adopter.
import { gunzipSync, gzipSync } from "node:zlib";
import { InputError } from "../core/errors.js";
import { CONTINUATION_ANNOTATION, INSTANCE_ANNOTATION } from "../manifests/labels.js";
import { readRunPlan, serializeRunPlan, type RunPlan } from "../run/run-plan.js";
import type { RunSettings } from "../executor/kubernetes/context.js";

/**
 * Most bytes the continuation annotation may take: the API server refuses a Job whose annotations pass 256 KiB
 * together, and the operator's own pod annotations share that room.
 */
export const MAX_CONTINUATION_BYTES = 200 * 1024;

/** What an adopter needs to continue a run, beside the pod: its plan (no secret) and what its store records of it. */
export interface RunContinuation {
  readonly plan: RunPlan;
  readonly repo: string | null;
  readonly workflow: string | null;
}

/** The continuation as the annotation's value: JSON, gzip, base64 (a plan is mostly step scripts: they compress well). */
export function encodeContinuation(
  settings: RunSettings,
  run: { repo: string | null; workflow: string | null },
): string {
  const json = JSON.stringify({ plan: serializeRunPlan(settings), repo: run.repo, workflow: run.workflow });
  return gzipSync(Buffer.from(json, "utf8")).toString("base64");
}

/** Reads the annotation's value back; throws InputError for one that is not a continuation of this version. */
export function decodeContinuation(value: string): RunContinuation {
  let parsed: { plan?: unknown; repo?: unknown; workflow?: unknown };
  try {
    parsed = JSON.parse(gunzipSync(Buffer.from(value, "base64")).toString("utf8")) as typeof parsed;
  } catch (error) {
    throw new InputError(`the run's continuation annotation cannot be read: ${(error as Error).message}`);
  }
  if (typeof parsed.plan !== "string") throw new InputError("the run's continuation annotation holds no plan");
  return {
    plan: readRunPlan(parsed.plan),
    repo: typeof parsed.repo === "string" ? parsed.repo : null,
    workflow: typeof parsed.workflow === "string" ? parsed.workflow : null,
  };
}

/**
 * The annotations a serve instance puts on a run's Job at create: itself as the owner and, when it fits, the
 * continuation. `tooLarge` says why a run carries none (it runs all the same, but no other instance can adopt it).
 */
export function buildOwnershipAnnotations(
  instance: string,
  settings: RunSettings,
  run: { repo: string | null; workflow: string | null },
): { annotations: Record<string, string>; tooLarge?: string } {
  const continuation = encodeContinuation(settings, run);
  if (continuation.length > MAX_CONTINUATION_BYTES)
    return {
      annotations: { [INSTANCE_ANNOTATION]: instance },
      tooLarge: `its plan takes ${Math.ceil(continuation.length / 1024)} KiB compressed, more than the ${MAX_CONTINUATION_BYTES / 1024} KiB a Job annotation may carry here: no other instance can adopt it`,
    };
  return { annotations: { [INSTANCE_ANNOTATION]: instance, [CONTINUATION_ANNOTATION]: continuation } };
}
