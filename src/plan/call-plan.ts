// The kubectl calls of a successful run, in order: a pure function printed by --dry-run.
import type { ExecutorSettings } from "../executor/context.js";
import { buildCreateArgs, buildDeleteJobArgs, buildExecArgs, buildGetEventsArgs, buildGetPodsArgs } from "../k8s/kubectl-args.js";
import { buildRunSelector } from "../k8s/labels.js";
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

/** Who packs the upload; a dry run spawns nothing, so the host tar is named, not probed. */
function describePacker(hostTar: string | undefined): string {
  return hostTar === undefined ? "packed by the runner" : `packed by ${hostTar} if it is GNU tar 1.29 or later, else by the runner`;
}

/** Every call a successful run makes, with the same builders the executor uses. */
export function planKubectlCalls(settings: ExecutorSettings): PlannedCall[] {
  const { target } = settings;
  const upload = [`the checkout → /work`, ...(settings.sharedStepsDir ? [`the shared steps → /steps`] : []), `the runner's files → /knotless`].join(", ");
  return [
    { args: buildCreateArgs(target), stdin: "the Job manifest above (JSON)" },
    { args: buildGetPodsArgs(target, buildRunSelector(settings.runIdLabel)), note: "polled until the pod runs" },
    { args: buildGetEventsArgs(target, "Pod", PLANNED_POD), note: "while the pod is Pending, every few seconds" },
    { args: buildExecArgs(target, PLANNED_POD, buildUploadCommand(), true), stdin: `tar of ${upload}, ${describePacker(settings.hostTar?.binary)}` },
    ...settings.steps.map((step, index) => ({ args: buildExecArgs(target, PLANNED_POD, helperCommand.run(index), false), note: `step ${index + 1}: ${step.name}` })),
    { args: buildExecArgs(target, PLANNED_POD, helperCommand.packOutputs(), false), note: "tar of /outputs → <out>/outputs" },
    { args: buildDeleteJobArgs(target, settings.jobName) },
  ];
}
