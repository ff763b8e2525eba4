// What the result and the dry run say of the workflow a run came from: pure types, below every layer that uses them.
import type { Trigger } from "./match-trigger.js";
import type { CloneSettings } from "./workflow-types.js";

/** One value clamped to a limit (onExceed: clamp), as the result records it (`workflow.clamped` of dev.knotless.check). */
export interface LimitClamp {
  /** What was clamped: a workflow key (`resources.cpu`, `steps[0].timeout`), or the caller's (`--cpu`, `overrides.timeout`). */
  readonly path: string;
  /** The value asked for and the limit it became, as the messages write them (`8`, `2h00m`). */
  readonly value: string;
  readonly limit: string;
  /** The limit's key in the runner configuration: `limits.maxCpu`, `limits.maxMemory` or `limits.maxTimeout`. */
  readonly setting: string;
  /** `file:line:column` of a workflow's value; absent for the caller's. */
  readonly at?: string;
}

/** The trigger as the result records it: its changed files only counted (there may be thousands), and the match. */
export type TriggerSummary = Omit<Trigger, "changedFiles"> & {
  readonly changedFileCount?: number;
  readonly matched: boolean;
  readonly reason: string;
};

/** What the result and the dry run say of the workflow a run came from. */
export interface WorkflowSummary {
  readonly file: string;
  /** The workflow's name: its file's base name, as Tangled names workflows; KNOTLESS_WORKFLOW. */
  readonly name: string;
  readonly engine: string;
  readonly imageFrom: "flag" | "workflow" | "nixery" | "microvm" | "default";
  /** The microvm image name the configuration mapped (`nixos`, `alpine`). */
  readonly imageName?: string;
  readonly clone: CloneSettings;
  /** Absent when no trigger was given (`when` was not evaluated). */
  readonly trigger?: TriggerSummary;
  /** What the runner configuration's `limits` clamped (onExceed: clamp), in the workflow's order; absent when nothing was. */
  readonly clamped?: readonly LimitClamp[];
}
