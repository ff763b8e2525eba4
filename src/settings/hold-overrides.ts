// Holds the caller's overrides (run's --cpu/--memory/--timeout/--step-timeout/--image, serve's `overrides`) to the runner configuration's `limits`, as a workflow's own values are held.
import { formatDuration } from "../core/duration.js";
import { describeSetting, type RunnerConfigSource } from "../config/runner-config.js";
import { InputError } from "../core/errors.js";
import { parseQuantity } from "../core/quantity.js";
import { matchImagePattern, type LimitClamp } from "./apply-limits.js";
import type { RunOverrides } from "./plan-workflow-run.js";

/** How the caller names each override in its messages: `--cpu` on the command line, `overrides.cpu` in serve. */
export type OverrideNames = Readonly<Record<keyof RunOverrides, string>>;

export const FLAG_NAMES: OverrideNames = {
  image: "--image",
  cpu: "--cpu",
  memory: "--memory",
  timeoutMs: "--timeout",
  stepTimeoutMs: "--step-timeout",
};
export const SUBMISSION_NAMES: OverrideNames = {
  image: "overrides.image",
  cpu: "overrides.cpu",
  memory: "overrides.memory",
  timeoutMs: "overrides.timeout",
  stepTimeoutMs: "overrides.stepTimeout",
};

export interface HeldOverrides {
  readonly overrides: RunOverrides;
  /** What was clamped (onExceed: clamp), as the result records it (`at` absent: not a workflow's value). */
  readonly clamps: readonly LimitClamp[];
  /** The same as messages for the run's log and the dry run. */
  readonly warnings: readonly string[];
}

/**
 * Applies `limits` to the overrides. Pure. Over a limit under `onExceed: refuse`, and an image no `limits.images`
 * pattern allows (never clamped), throw one InputError (exit 2, 400 in serve) listing every problem, each naming the
 * override and the limit; under `clamp` the value becomes the limit.
 */
export function holdOverrides(
  overrides: RunOverrides,
  source: RunnerConfigSource,
  names: OverrideNames,
): HeldOverrides {
  const limits = source.config.limits;
  const held: { -readonly [K in keyof RunOverrides]: RunOverrides[K] } = { ...overrides };
  const problems: string[] = [];
  const clamps: LimitClamp[] = [];
  const warnings: string[] = [];
  function hold<K extends "cpu" | "memory" | "timeoutMs" | "stepTimeoutMs">(
    key: K,
    limit: RunOverrides[K] | undefined,
    setting: string,
    over: (value: NonNullable<RunOverrides[K]>, limit: NonNullable<RunOverrides[K]>) => boolean,
    show: (value: NonNullable<RunOverrides[K]>) => string,
  ): void {
    const value = overrides[key];
    if (value === undefined || limit === undefined || !over(value!, limit!)) return;
    const named = describeSetting(source, `limits.${setting} ${show(limit!)}`);
    if (limits.onExceed === "clamp") {
      held[key] = limit;
      clamps.push({ path: names[key], value: show(value!), limit: show(limit!), setting: `limits.${setting}` });
      warnings.push(`${names[key]} ${show(value!)} is over ${named}: clamped to ${show(limit!)} (onExceed: clamp)`);
      return;
    }
    problems.push(
      `${names[key]} ${show(value!)} is over ${named}; ask for at most ${show(limit!)}, or the operator sets limits.onExceed: clamp`,
    );
  }
  const byQuantity = (value: string, limit: string) => parseQuantity(value)! > parseQuantity(limit)!;
  const byDuration = (value: number, limit: number) => value > limit;
  hold("cpu", limits.maxCpu, "maxCpu", byQuantity, String);
  hold("memory", limits.maxMemory, "maxMemory", byQuantity, String);
  hold("timeoutMs", limits.maxTimeoutMs, "maxTimeout", byDuration, formatDuration);
  hold("stepTimeoutMs", limits.maxTimeoutMs, "maxTimeout", byDuration, formatDuration);
  const image = overrides.image;
  if (
    image !== undefined &&
    limits.images !== undefined &&
    !limits.images.some((pattern) => matchImagePattern(pattern, image))
  ) {
    problems.push(
      `${names.image} ${image} matches none of the images ${describeSetting(source, "limits.images")} allows (${limits.images.join(", ")})`,
    );
  }
  if (problems.length > 0) throw new InputError(problems.join("\n"));
  return { overrides: held, clamps, warnings };
}
