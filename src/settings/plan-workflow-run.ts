// Decides what one run of a resolved workflow is: whether the trigger matches, and the steps, image, budgets and variables, with the caller's overrides on top.
import type { TriggerSummary, WorkflowSummary } from "../workflow/workflow-summary.js";
import type { ArtifactSpec } from "../workflow/artifact-types.js";
import type { EphemeralStorage } from "../config/runner-config.js";
import type { CacheSpec } from "../workflow/cache-types.js";
import {
  identifyHashFilesCall,
  listHashFilesCalls,
  renderKeyTemplate,
  type KeyInputs,
} from "../workflow/render-key.js";
import type { StepSpec } from "../workflow/steps-file.js";
import { matchWorkflow, type Trigger } from "../workflow/match-trigger.js";
import type { Placement, ResolvedWorkflow } from "./resolve-workflow.js";
import type { LimitClamp } from "./apply-limits.js";
import { DOCKER_HOST } from "../pod/docker-daemon.js";
import { makeIssue, WorkflowError, type WorkflowIssue } from "../workflow/workflow-errors.js";
import type { KeyTemplateAt, WorkflowArtifact, WorkflowCache } from "../workflow/workflow-types.js";
import type { EnvVar } from "../core/env-var.js";
import { buildRunVariables } from "./run-variables.js";
import { planServices, type ServiceSpec } from "../manifests/service-containers.js";

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

/** The trigger's summary for the result and the dry run. */
function summarizeTrigger(trigger: Trigger, match: { matched: boolean; reason: string }): TriggerSummary {
  const { changedFiles, ...rest } = trigger;
  return { ...rest, ...(changedFiles !== undefined ? { changedFileCount: changedFiles.length } : {}), ...match };
}

export type PlannedRun =
  | {
      readonly matched: false;
      readonly workflow: WorkflowSummary;
      readonly reason: string;
      readonly image: string;
      readonly steps: StepSpec[];
    }
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
      /** Node selector and runtime class of the run's pod. */
      readonly placement: Placement;
      /** `virtualisation.docker`: the privileged Docker daemon beside the steps (DOCKER_HOST in env). */
      readonly dockerDaemon?: { readonly image: string };
      /** The run container's ephemeral-storage request and limit (`pod.ephemeralStorage`). */
      readonly ephemeralStorage?: EphemeralStorage;
      /** The workflow's `services:`, in file order; absent without. */
      readonly services?: ServiceSpec[];
      /** Run variables, then the workflow's environment: lowest precedence first. */
      readonly env: EnvVar[];
      /** The workflow's `caches:`, keys rendered for this run, in file order; empty without caches and with --no-cache. */
      readonly caches: CacheSpec[];
      /** The workflow's `artifacts:`, in file order. */
      readonly artifacts: ArtifactSpec[];
    };

/** What the caches of a run are rendered with, besides the run's variables. */
export interface CachePlanInput {
  /** The hash of each hashFiles call the keys make (listHashFilesNeeded), by identifyHashFilesCall(patterns). */
  readonly fileHashes?: ReadonlyMap<string, string>;
  /** `--no-cache`: nothing is rendered, hashed, restored or saved. */
  readonly off?: boolean;
}

/** The workflow's name from its file: `.tangled/workflows/build.yml` → `build.yml`. */
export function nameWorkflow(file: string): string {
  return file.split(/[\\/]/).pop() || file;
}

/** The pattern lists of every hashFiles call of the workflow's keys and restore keys, each once, in file order. */
export function listHashFilesNeeded(workflow: Pick<ResolvedWorkflow, "caches">): Array<readonly string[]> {
  const seen = new Map<string, readonly string[]>();
  for (const cache of workflow.caches ?? []) {
    for (const { template } of [cache.key, ...cache.restoreKeys]) {
      for (const patterns of listHashFilesCalls(template)) seen.set(identifyHashFilesCall(patterns), patterns);
    }
  }
  return [...seen.values()];
}

/**
 * Renders each cache's key and restore keys: every problem (a variable the run does not set, a key too long or
 * unprintable, two caches rendering the same key) is a WorkflowIssue at the template's place.
 */
export function planCaches(
  file: string,
  caches: readonly WorkflowCache[],
  inputs: KeyInputs,
): { caches: CacheSpec[]; issues: WorkflowIssue[] } {
  const issues: WorkflowIssue[] = [];
  const render = (at: KeyTemplateAt): string | undefined => {
    const rendered = renderKeyTemplate(at.template, inputs);
    if (rendered.ok) return rendered.key;
    issues.push(
      makeIssue(
        file,
        at.position,
        at.path,
        `the key template ${JSON.stringify(at.template.source)} ${rendered.message}`,
      ),
    );
    return undefined;
  };
  const specs: CacheSpec[] = [];
  const keyed = new Map<string, KeyTemplateAt>();
  for (const cache of caches) {
    const key = render(cache.key);
    const restoreKeys = cache.restoreKeys.map(render);
    if (key === undefined || restoreKeys.some((prefix) => prefix === undefined)) continue;
    const first = keyed.get(key);
    if (first !== undefined) {
      issues.push(
        makeIssue(
          file,
          cache.key.position,
          cache.key.path,
          `renders ${JSON.stringify(key)}, the same key as ${first.path} at ${file}:${first.position.line}:${first.position.column}; keys are immutable once saved, so only one of them could ever be saved`,
        ),
      );
      continue;
    }
    keyed.set(key, cache.key);
    specs.push({ key, restoreKeys: restoreKeys as string[], paths: [...cache.paths] });
  }
  return { caches: specs, issues };
}

/** The workflow's artifacts as the run collects them. */
export function planArtifacts(artifacts: readonly WorkflowArtifact[]): ArtifactSpec[] {
  return artifacts.map((artifact) => ({
    name: artifact.name,
    paths: [...artifact.paths],
    when: artifact.when,
    required: artifact.required,
  }));
}

/**
 * Plans one run of a resolved workflow (src/settings/resolve-workflow.ts). Pure. With a trigger, `when` is
 * evaluated and a workflow that does not match is not run (`matched: false` with the reason); without one it runs.
 * Precedence: the overrides over the workflow's fields over RUN_DEFAULTS. The cache keys are rendered with the
 * run's variables (the run variables, then the workflow's environment) and `input.caches.fileHashes`; a key that
 * cannot be rendered throws WorkflowError (bad input), naming the template's place in the file.
 */
export function planWorkflowRun(
  workflow: ResolvedWorkflow,
  input: {
    readonly runId: string;
    readonly trigger?: Trigger;
    readonly overrides?: RunOverrides;
    readonly caches?: CachePlanInput;
    /** What the limits clamped of the overrides (holdOverrides), recorded after the workflow's own clamps. */
    readonly overrideClamps?: readonly LimitClamp[];
  },
): PlannedRun {
  const overrides = input.overrides ?? {};
  const name = nameWorkflow(workflow.file);
  const match = input.trigger === undefined ? undefined : matchWorkflow(workflow.when, input.trigger);
  const image = overrides.image ?? workflow.image ?? RUN_DEFAULTS.image;
  const clamped = [...(workflow.clamps ?? []), ...(input.overrideClamps ?? [])];
  const summary: WorkflowSummary = {
    file: workflow.file,
    name,
    engine: workflow.engine,
    imageFrom: overrides.image !== undefined ? "flag" : workflow.imageFrom,
    ...(overrides.image === undefined && workflow.imageName !== undefined ? { imageName: workflow.imageName } : {}),
    clone: workflow.clone,
    ...(input.trigger && match ? { trigger: summarizeTrigger(input.trigger, match) } : {}),
    ...(clamped.length > 0 ? { clamped } : {}),
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
  const docker = workflow.dockerDaemon ? [{ name: "DOCKER_HOST", value: DOCKER_HOST }] : [];
  const env = [
    ...buildRunVariables({
      runId: input.runId,
      workflowName: name,
      ...(input.trigger ? { trigger: input.trigger } : {}),
    }),
    ...docker,
    ...workflow.env,
  ];
  const cacheInput = input.caches ?? {};
  const planned = cacheInput.off
    ? { caches: [], issues: [] }
    : planCaches(workflow.file, workflow.caches ?? [], {
        variables: new Map(env.map((variable) => [variable.name, variable.value])),
        fileHashes: cacheInput.fileHashes ?? new Map(),
      });
  if (planned.issues.length > 0) throw new WorkflowError(planned.issues);
  return {
    matched: true,
    workflow: summary,
    image,
    cpu: overrides.cpu ?? workflow.resources.cpu ?? RUN_DEFAULTS.cpu,
    memory: overrides.memory ?? workflow.resources.memory ?? RUN_DEFAULTS.memory,
    timeoutMs:
      overrides.timeoutMs ?? workflow.timeoutMs ?? Math.min(RUN_DEFAULTS.timeoutMs, workflow.maxTimeoutMs ?? Infinity),
    ...(stepTimeoutMs !== undefined ? { stepTimeoutMs } : {}),
    shell: workflow.shell.join(" "),
    steps,
    placement: workflow.placement,
    ...(workflow.dockerDaemon ? { dockerDaemon: workflow.dockerDaemon } : {}),
    ...(workflow.ephemeralStorage ? { ephemeralStorage: workflow.ephemeralStorage } : {}),
    env,
    caches: planned.caches,
    artifacts: planArtifacts(workflow.artifacts ?? []),
    ...(workflow.services !== undefined ? { services: planServices(workflow.services) } : {}),
  };
}

export type { WorkflowSummary } from "../workflow/workflow-summary.js";
