// Decides what one run of a resolved workflow is: whether the trigger matches, and the steps, image, budgets and variables, with the caller's overrides on top.
import type { StepSpec } from "../input/steps-file.js";
import { matchWorkflow, type Trigger } from "../workflow/match-trigger.js";
import type { ResolvedWorkflow } from "../workflow/resolve-workflow.js";
import type { CloneSettings, EnvVar } from "../workflow/workflow-types.js";
import { buildRunVariables } from "./run-variables.js";

/** What the runner uses when neither its caller nor the workflow says. */
export const RUN_DEFAULTS = { image: "busybox:1.36", cpu: "500m", memory: "512Mi", timeoutMs: 3_600_000 } as const;

/** The caller's own choices (the CLI's flags, the daemon's settings): they win over the workflow's fields. */
export interface RunOverrides {
  readonly image?: string;
  readonly cpu?: string;
  readonly memory?: string;
  readonly timeoutMs?: number;
  /** One budget for every step; given, it replaces the steps' own `timeout`. */
  readonly stepTimeoutMs?: number;
}

/** What the result and the dry run say of the workflow a run came from. */
export interface WorkflowSummary {
  readonly file: string;
  /** The workflow's name: its file's base name, as Tangled names workflows; KNOTLESS_WORKFLOW. */
  readonly name: string;
  readonly engine: string;
  readonly imageFrom: "flag" | "workflow" | "nixery" | "default";
  readonly clone: CloneSettings;
  /** Absent when no trigger was given (`when` was not evaluated). */
  readonly trigger?: Trigger & { readonly matched: boolean; readonly reason: string };
}

export type WorkflowRunPlan =
  | { readonly matched: false; readonly workflow: WorkflowSummary; readonly reason: string; readonly image: string; readonly steps: StepSpec[] }
  | {
      readonly matched: true;
      readonly workflow: WorkflowSummary;
      readonly image: string;
      readonly cpu: string;
      readonly memory: string;
      readonly timeoutMs: number;
      readonly stepTimeoutMs?: number;
      readonly shell: string;
      readonly steps: StepSpec[];
      /** Run variables, then the workflow's environment: lowest precedence first. */
      readonly env: EnvVar[];
    };

/** The workflow's name from its file: `.tangled/workflows/build.yml` → `build.yml`. */
export function nameWorkflow(file: string): string {
  return file.split(/[\\/]/).pop() || file;
}

/**
 * Plans one run of a resolved workflow (src/workflow/resolve-workflow.ts). Pure. With a trigger, `when` is
 * evaluated and a workflow that does not match is not run (`matched: false` with the reason); without one it runs.
 * Precedence: the overrides over the workflow's fields over RUN_DEFAULTS.
 */
export function planWorkflowRun(workflow: ResolvedWorkflow, input: { readonly runId: string; readonly trigger?: Trigger; readonly overrides?: RunOverrides }): WorkflowRunPlan {
  const overrides = input.overrides ?? {};
  const name = nameWorkflow(workflow.file);
  const match = input.trigger === undefined ? undefined : matchWorkflow(workflow.when, input.trigger);
  const image = overrides.image ?? workflow.image ?? RUN_DEFAULTS.image;
  const summary: WorkflowSummary = {
    file: workflow.file,
    name,
    engine: workflow.engine,
    imageFrom: overrides.image !== undefined ? "flag" : workflow.imageFrom,
    clone: workflow.clone,
    ...(input.trigger && match ? { trigger: { ...input.trigger, ...match } } : {}),
  };
  const stepTimeoutMs = overrides.stepTimeoutMs;
  const steps = workflow.steps.map((step) => ({
    name: step.name,
    script: step.command,
    source: step.source,
    env: step.env,
    ...(stepTimeoutMs === undefined && step.timeoutMs !== undefined ? { timeoutMs: step.timeoutMs } : {}),
  }));
  if (match && !match.matched) return { matched: false, workflow: summary, reason: match.reason, image, steps };
  return {
    matched: true,
    workflow: summary,
    image,
    cpu: overrides.cpu ?? workflow.resources.cpu ?? RUN_DEFAULTS.cpu,
    memory: overrides.memory ?? workflow.resources.memory ?? RUN_DEFAULTS.memory,
    timeoutMs: overrides.timeoutMs ?? workflow.timeoutMs ?? RUN_DEFAULTS.timeoutMs,
    ...(stepTimeoutMs !== undefined ? { stepTimeoutMs } : {}),
    shell: workflow.shell.join(" "),
    steps,
    env: [...buildRunVariables({ runId: input.runId, workflowName: name, ...(input.trigger ? { trigger: input.trigger } : {}) }), ...workflow.env],
  };
}
