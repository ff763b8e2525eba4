// Maps one planned run (a workflow's plan, or a steps file's steps) and the host's choices to the RunSettings runWorkflow takes.
import type { ArtifactSpec } from "../workflow/artifact-types.js";
import type { PodConfig } from "../config/runner-config.js";
import type { CacheBackend } from "../executor/kubernetes/context.js";
import type { StepSpec } from "../workflow/steps-file.js";
import type { ClusterTarget } from "../cluster/cluster.js";
import { buildJobName, buildRunIdLabel } from "../manifests/names.js";
import type { ProcessIdentity } from "../manifests/owner.js";
import type { Secret } from "../secrets/secret.js";
import type { HostTarSetting } from "../transfer/host-tar.js";
import { RUN_DEFAULTS, type RunOverrides, type PlannedRun } from "./plan-workflow-run.js";
import type { RunSettings } from "../executor/kubernetes/context.js";
import { buildRunVariables } from "./run-variables.js";

/** Everything a run's settings are made of besides the plan: what the CLI reads from flags and `serve` from a request and its own options. */
export interface RunSettingsInput {
  readonly runId: string;
  readonly target: ClusterTarget;
  /** The workflow's plan (prepareWorkflowRun); absent for a steps file, whose steps are `steps`. */
  readonly plan?: PlannedRun;
  /** A steps file's steps; ignored when there is a plan. */
  readonly steps?: readonly StepSpec[];
  /** The caller's overrides: they already shaped a matched plan; they fill in a steps file's run and an unmatched plan's. */
  readonly overrides?: RunOverrides;
  readonly checkoutDir: string;
  readonly sharedStepsDir?: string;
  readonly outDir: string;
  readonly podTimeoutMs: number;
  /** The pod stops itself after this long without a runner exec (RunSettings.podIdleTimeoutMs). */
  readonly podIdleTimeoutMs?: number;
  readonly maxOutputBytes: number;
  readonly maxLogBytes: number;
  readonly keep?: boolean;
  readonly secrets?: readonly Secret[];
  readonly keepWarm?: { readonly seconds: number; readonly maxWarm: number };
  /** false: do not look for a warm placeholder to claim. */
  readonly claimWarm?: boolean;
  readonly hostTar?: HostTarSetting;
  readonly owner?: ProcessIdentity;
  /** Where the plan's caches live; without it the run has no caches (each declared one is then simply not used). */
  readonly cacheBackend?: CacheBackend;
  /**
   * The runner configuration's `pod` (RunnerConfig.pod, from --config): its keys become settings.pod (its
   * ephemeralStorage reaches the run through the plan, its disruptionBudget becomes settings.disruptionBudget,
   * default true). Absent: none, and a disruption budget.
   */
  readonly pod?: PodConfig;
}

/** The run's settings. Pure: the job name and run-id label derive from the run id; the plan's fields win over the defaults. */
export function buildRunSettings(input: RunSettingsInput): RunSettings & { readonly maxLogBytes: number } {
  const { plan, runId } = input;
  const overrides = input.overrides ?? {};
  const fallback = {
    cpu: overrides.cpu ?? RUN_DEFAULTS.cpu,
    memory: overrides.memory ?? RUN_DEFAULTS.memory,
    timeoutMs: overrides.timeoutMs ?? RUN_DEFAULTS.timeoutMs,
  };
  const planned =
    plan === undefined
      ? {
          image: overrides.image ?? RUN_DEFAULTS.image,
          ...fallback,
          ...(overrides.stepTimeoutMs !== undefined ? { stepTimeoutMs: overrides.stepTimeoutMs } : {}),
          steps: [...(input.steps ?? [])],
          env: buildRunVariables({ runId }),
        }
      : plan.matched
        ? {
            image: plan.image,
            cpu: plan.cpu,
            memory: plan.memory,
            timeoutMs: plan.timeoutMs,
            ...(plan.stepTimeoutMs !== undefined ? { stepTimeoutMs: plan.stepTimeoutMs } : {}),
            steps: plan.steps,
            env: plan.env,
            shell: plan.shell,
            ...(plan.placement.nodeSelector || plan.placement.runtimeClassName ? { placement: plan.placement } : {}),
            ...(plan.dockerDaemon ? { dockerDaemon: plan.dockerDaemon } : {}),
            ...(plan.ephemeralStorage ? { ephemeralStorage: plan.ephemeralStorage } : {}),
            ...(plan.services !== undefined ? { services: plan.services } : {}),
          }
        : { image: plan.image, ...fallback, steps: plan.steps, env: [] };
  const caches =
    plan?.matched && plan.caches.length > 0 && input.cacheBackend
      ? { caches: plan.caches, cacheBackend: input.cacheBackend }
      : {};
  const { ephemeralStorage: _planned, disruptionBudget = true, ...pod } = input.pod ?? {};
  const artifacts: { artifacts?: ArtifactSpec[] } =
    plan?.matched && plan.artifacts.length > 0 ? { artifacts: plan.artifacts } : {};
  return {
    runId,
    jobName: buildJobName(runId),
    runIdLabel: buildRunIdLabel(runId),
    target: input.target,
    ...planned,
    ...((input.secrets ?? []).length > 0 ? { secrets: input.secrets } : {}),
    checkoutDir: input.checkoutDir,
    ...(input.sharedStepsDir ? { sharedStepsDir: input.sharedStepsDir } : {}),
    outDir: input.outDir,
    podTimeoutMs: input.podTimeoutMs,
    ...(input.podIdleTimeoutMs === undefined ? {} : { podIdleTimeoutMs: input.podIdleTimeoutMs }),
    maxOutputBytes: input.maxOutputBytes,
    maxLogBytes: input.maxLogBytes,
    keep: input.keep ?? false,
    ...(plan ? { workflow: plan.workflow } : {}),
    ...(input.keepWarm ? { keepWarm: input.keepWarm } : {}),
    ...(input.claimWarm === false ? { claimWarm: false } : {}),
    ...(input.hostTar ? { hostTar: input.hostTar } : {}),
    ...(input.owner ? { owner: input.owner } : {}),
    ...caches,
    ...artifacts,
    ...(Object.keys(pod).length > 0 ? { pod } : {}),
    disruptionBudget,
  };
}
