// The variables every step of a run sees before the workflow's own, in their order of precedence (later wins).
import { POD_OUTPUTS_DIR } from "../workflow/pod-paths.js";
import { deriveRefNames, type Trigger } from "../workflow/match-trigger.js";
import type { EnvVar } from "../core/env-var.js";
import { buildTangledVariables } from "./tangled-variables.js";

/**
 * CI=true, KNOTLESS_RUN_ID, KNOTLESS_WORKFLOW, KNOTLESS_EVENT, KNOTLESS_REF, KNOTLESS_REF_NAME, KNOTLESS_SHA,
 * KNOTLESS_REPO (each when known), then KNOTLESS_OUTPUTS=/outputs, then Tangled's TANGLED_* (src/settings/tangled-variables.ts). The workflow's `environment` and each step's come
 * after these (src/executor/kubernetes/context.ts, src/workflow/steps-file.ts), so a file may override them.
 */
export function buildRunVariables(input: {
  readonly runId: string;
  readonly workflowName?: string;
  readonly trigger?: Trigger;
}): EnvVar[] {
  const { trigger } = input;
  const refName = trigger?.ref !== undefined ? deriveRefNames(trigger.ref).refName : (trigger?.branch ?? trigger?.tag);
  const known: Array<[string, string | undefined]> = [
    ["CI", "true"],
    ["KNOTLESS_RUN_ID", input.runId],
    ["KNOTLESS_WORKFLOW", input.workflowName],
    ["KNOTLESS_EVENT", trigger?.event],
    [
      "KNOTLESS_REF",
      trigger?.ref ??
        (trigger?.branch !== undefined
          ? `refs/heads/${trigger.branch}`
          : trigger?.tag !== undefined
            ? `refs/tags/${trigger.tag}`
            : undefined),
    ],
    ["KNOTLESS_REF_NAME", refName],
    ["KNOTLESS_SHA", trigger?.sha],
    ["KNOTLESS_REPO", trigger?.repo],
    ["KNOTLESS_OUTPUTS", POD_OUTPUTS_DIR],
  ];
  return [
    ...known.flatMap(([name, value]) => (value === undefined ? [] : [{ name, value }])),
    ...buildTangledVariables(trigger),
  ];
}
