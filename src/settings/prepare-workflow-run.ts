// Plans one run of a loaded workflow with what only the host can tell: the hashes of the checkout's files that the
// cache keys name. The CLI and the library (the daemon, which has the workflow as text) both plan through here.
import type { LimitClamp } from "./apply-limits.js";
import type { LoadedWorkflow } from "./load-workflow.js";
import { matchWorkflow, type Trigger } from "../workflow/match-trigger.js";
import { listHashFilesNeeded, planWorkflowRun, type RunOverrides, type PlannedRun } from "./plan-workflow-run.js";
import { formatWarning, makeIssue } from "../workflow/workflow-errors.js";
import { identifyHashFilesCall, listHashFilesCalls } from "../workflow/render-key.js";
import { hashCheckoutFiles } from "../cache/hash-files.js";

export interface PrepareWorkflowRunInput {
  readonly runId: string;
  /** Absent: `when` is not evaluated and the workflow runs. */
  readonly trigger?: Trigger;
  readonly overrides?: RunOverrides;
  /** What the limits clamped of the overrides (holdOverrides): the result records them with the workflow's. */
  readonly overrideClamps?: readonly LimitClamp[];
  /** The checkout the run uploads; absent when the workflow skips it (then no key may use hashFiles). */
  readonly checkoutDir?: string;
  /** `--no-cache`: no key is rendered, no file hashed. */
  readonly cachesOff?: boolean;
}

/**
 * The plan, and the warnings hashing gave (a hashFiles pattern matching nothing, a link not followed), worth printing
 * before the run beside the loaded workflow's own (LoadedWorkflow.warnings).
 */
export interface PreparedRun {
  readonly plan: PlannedRun;
  readonly warnings: readonly string[];
}

/**
 * Hashes what the cache keys' hashFiles calls match in the checkout, each pattern list once, only for a run that
 * will happen (caches on, the trigger matching) and has a checkout; then plans the run (planWorkflowRun). Throws
 * WorkflowError (an InputError) for a key that cannot be rendered. Reads the checkout; nothing else.
 */
export async function prepareWorkflowRun(loaded: LoadedWorkflow, input: PrepareWorkflowRunInput): Promise<PreparedRun> {
  const off = input.cachesOff ?? false;
  const { fileHashes, warnings } = await hashKeyFiles(loaded, input.trigger, input.checkoutDir, off);
  const plan = planWorkflowRun(loaded.resolved, {
    runId: input.runId,
    ...(input.trigger ? { trigger: input.trigger } : {}),
    ...(input.overrides ? { overrides: input.overrides } : {}),
    ...(input.overrideClamps ? { overrideClamps: input.overrideClamps } : {}),
    caches: { fileHashes, off },
  });
  return { plan, warnings };
}

async function hashKeyFiles(
  loaded: LoadedWorkflow,
  trigger: Trigger | undefined,
  checkoutDir: string | undefined,
  off: boolean,
): Promise<{ fileHashes: Map<string, string>; warnings: string[] }> {
  const fileHashes = new Map<string, string>();
  const warnings: string[] = [];
  const needed = listHashFilesNeeded(loaded.resolved);
  if (
    off ||
    needed.length === 0 ||
    checkoutDir === undefined ||
    (trigger !== undefined && !matchWorkflow(loaded.resolved.when, trigger).matched)
  )
    return { fileHashes, warnings };
  const templates = (loaded.resolved.caches ?? []).flatMap((cache) => [cache.key, ...cache.restoreKeys]);
  for (const patterns of needed) {
    const id = identifyHashFilesCall(patterns);
    const hashed = await hashCheckoutFiles(checkoutDir, patterns);
    fileHashes.set(id, hashed.hash);
    const at = templates.find((template) =>
      listHashFilesCalls(template.template).some((call) => identifyHashFilesCall(call) === id),
    )!;
    for (const warning of hashed.warnings)
      warnings.push(formatWarning(makeIssue(loaded.resolved.file, at.position, at.path, warning)));
  }
  return { fileHashes, warnings };
}
