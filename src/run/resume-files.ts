// `run`'s resume files in --out: plan.json (written as the run starts) and checkpoint.json (each checkpoint, atomically).
import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { InputError } from "../core/errors.js";
import type { CheckpointStore, RunCheckpoint } from "./run-checkpoint.js";
import { readRunPlan, type RunPlan } from "./run-plan.js";

export const PLAN_FILE = "plan.json";
export const CHECKPOINT_FILE = "checkpoint.json";

/** Writes `text` to `path` whole or not at all: a temporary file beside it, then a rename over it. */
function writeAtomicSync(path: string, text: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode: 0o600 });
  renameSync(temporary, path);
}

/** Writes the run's plan (src/run/run-plan.ts: no secret value) into `outDir`. */
export function writePlanFile(outDir: string, plan: string): void {
  writeAtomicSync(join(outDir, PLAN_FILE), plan);
}

/** Checkpoints into `<outDir>/checkpoint.json`, each replacing the last atomically. */
export function createCheckpointFile(outDir: string): CheckpointStore {
  return { save: (checkpoint) => writeAtomicSync(join(outDir, CHECKPOINT_FILE), JSON.stringify(checkpoint)) };
}

/**
 * What `run --resume` continues from: the plan and the last checkpoint a killed `run` left in `outDir`. InputError
 * (exit 2) for a directory without them, or whose run is over (result.json is there).
 */
export function readResumeFiles(outDir: string): { plan: RunPlan; checkpoint: RunCheckpoint } {
  const read = (name: string): string | undefined => {
    try {
      return readFileSync(join(outDir, name), "utf8");
    } catch {
      return undefined;
    }
  };
  if (read("result.json") !== undefined)
    throw new InputError(`--resume: the run in ${outDir} is over (its result.json is there): nothing to resume`);
  const plan = read(PLAN_FILE);
  const checkpoint = read(CHECKPOINT_FILE);
  if (plan === undefined || checkpoint === undefined)
    throw new InputError(
      `--resume: ${outDir} has no ${plan === undefined ? PLAN_FILE : CHECKPOINT_FILE}: it holds no run a killed \`run\` left`,
    );
  let parsed: RunCheckpoint;
  try {
    parsed = JSON.parse(checkpoint) as RunCheckpoint;
  } catch (error) {
    throw new InputError(`--resume: ${join(outDir, CHECKPOINT_FILE)} is not JSON: ${(error as Error).message}`);
  }
  if (parsed.version !== 1)
    throw new InputError(`--resume: ${join(outDir, CHECKPOINT_FILE)} is not a checkpoint of version 1`);
  return { plan: readRunPlan(plan), checkpoint: parsed };
}

/** Removes the resume files once the run's result is written: nothing is left to resume. */
export function removeResumeFiles(outDir: string): void {
  for (const name of [PLAN_FILE, CHECKPOINT_FILE]) rmSync(join(outDir, name), { force: true });
}
