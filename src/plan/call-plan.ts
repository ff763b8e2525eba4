// The kubectl calls of a successful run, in order: a pure function printed by --dry-run.
import { DEFAULT_TIMINGS, type ExecutorSettings } from "../executor/context.js";
import { checkStepEnvironment } from "../input/step-environment.js";
import { buildAnnotateJobArgs, buildCreateArgs, buildDeleteJobArgs, buildExecArgs, buildGetEventsArgs, buildGetPodsArgs, buildWatchJobArgs } from "../k8s/kubectl-args.js";
import { buildRunSelector, HEARTBEAT_ANNOTATION, KEPT_ANNOTATION } from "../k8s/labels.js";
import { buildUploadCommand, helperCommand } from "../pod/helper-script.js";

export interface PlannedCall {
  readonly args: readonly string[];
  /** What goes to stdin, described (never the bytes). */
  readonly stdin?: string;
  /** When the call is made, if not exactly once. */
  readonly note?: string;
}

/** The pod name is only known once the Job made it; the plan shows this placeholder. */
export const PLANNED_POD = "<pod>";
/** The time an annotation records is the call's own; the plan shows this placeholder. */
export const PLANNED_TIME = "<now>";

/** Who packs the upload; a dry run spawns nothing, so the host tar is named, not probed. */
function describePacker(hostTar: string | undefined): string {
  return hostTar === undefined ? "packed by the runner" : `packed by ${hostTar} if it is GNU tar 1.29 or later, else by the runner`;
}

/** The secrets exec, when the run has secrets: its stdin described by count and names, never by value. */
function planSecretsCall(settings: ExecutorSettings): PlannedCall[] {
  const secrets = settings.secrets ?? [];
  if (secrets.length === 0) return [];
  const names = secrets.map((secret) => secret.name).join(", ");
  return [{ args: buildExecArgs(settings.target, PLANNED_POD, helperCommand.takeSecrets(), true), stdin: `${secrets.length} ${secrets.length === 1 ? "secret" : "secrets"} (${names}) → /knotless-secrets, memory-backed` }];
}

/**
 * Every call a successful run makes, with the same builders the executor uses. The cancel watch and the heartbeat
 * run alongside the others, from the create until teardown. Refuses, as the run would (InputError), an environment
 * the steps cannot carry.
 */
export function planKubectlCalls(settings: ExecutorSettings, options: { readonly heartbeatIntervalMs?: number } = {}): PlannedCall[] {
  checkStepEnvironment(settings);
  const { target } = settings;
  const every = `${(options.heartbeatIntervalMs ?? DEFAULT_TIMINGS.heartbeatIntervalMs) / 1000}s`;
  const upload = [`the checkout → /work`, ...(settings.sharedStepsDir ? [`the shared steps → /steps`] : []), `the runner's files → /knotless`].join(", ");
  return [
    { args: buildCreateArgs(target), stdin: "the Job manifest above (JSON)" },
    { args: buildWatchJobArgs(target, settings.jobName), note: "from the create until teardown, started again when it ends: notices a cancel requested through the cluster" },
    { args: buildAnnotateJobArgs(target, settings.jobName, { [HEARTBEAT_ANNOTATION]: PLANNED_TIME }), note: `the heartbeat, every ${every} from the create until teardown` },
    { args: buildGetPodsArgs(target, buildRunSelector(settings.runIdLabel)), note: "polled until the pod runs" },
    { args: buildGetEventsArgs(target, "Pod", PLANNED_POD), note: "while the pod is Pending, every few seconds" },
    { args: buildExecArgs(target, PLANNED_POD, buildUploadCommand(), true), stdin: `tar of ${upload}, ${describePacker(settings.hostTar?.binary)}` },
    ...planSecretsCall(settings),
    ...settings.steps.map((step, index) => ({ args: buildExecArgs(target, PLANNED_POD, helperCommand.run(index), false), note: `step ${index + 1}: ${step.name}` })),
    { args: buildExecArgs(target, PLANNED_POD, helperCommand.packOutputs(), false), note: `${(settings.secrets?.length ?? 0) > 0 ? "removes the secrets from the pod, then " : ""}tar of /outputs → <out>/outputs` },
    settings.keep
      ? { args: buildAnnotateJobArgs(target, settings.jobName, { [KEPT_ANNOTATION]: PLANNED_TIME }), note: "--keep: the Job stays (gc spares it while it lasts)" }
      : { args: buildDeleteJobArgs(target, settings.jobName) },
  ];
}
