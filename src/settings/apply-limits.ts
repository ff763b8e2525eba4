// Holds a workflow to the operator's `limits` (--config): refused with the limit and the file position, or clamped.
import type { LimitClamp } from "../workflow/workflow-summary.js";
import { describeSetting, type RunnerConfigSource } from "../config/runner-config.js";
import { formatDuration } from "../core/duration.js";
import { parseQuantity } from "../core/quantity.js";
import { makeIssue, type WorkflowIssue } from "../workflow/workflow-errors.js";
import { describeStep } from "../workflow/step-label.js";
import type { ResourceSettings, SourcePosition, Workflow } from "../workflow/workflow-types.js";

export interface LimitedWorkflow {
  /** Values over a limit under `onExceed: refuse`, and images no pattern allows (never clamped). */
  readonly errors: readonly WorkflowIssue[];
  /** What was clamped, each at the value's position: the run logs them as warnings, the dry run prints them. */
  readonly clamped: readonly WorkflowIssue[];
  /** The same clamps as data, in the same order. */
  readonly clamps: readonly LimitClamp[];
  readonly resources: ResourceSettings;
  readonly timeoutMs?: number;
  /** Each step's timeout, in the order of workflow.steps. */
  readonly stepTimeoutsMs: readonly (number | undefined)[];
}

/** `*` matches within a path segment (no `/`), `**` across segments; everything else is literal. */
export function matchImagePattern(pattern: string, image: string): boolean {
  const source = pattern
    .split("**")
    .map((part) =>
      part
        .split("*")
        .map((text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
        .join("[^/]*"),
    )
    .join(".*");
  return new RegExp(`^${source}$`).test(image);
}

/** A nixery workflow's composed image and the Nixery registry (normalized `--nixery`) it is pulled from. */
export interface NixeryImage {
  readonly base: string;
  readonly image: string;
}

/**
 * Applies `source.config.limits` to what the workflow itself asks for: `resources.cpu`/`memory`, the workflow's and
 * each step's `timeout`, its own `image`, its services' images and, for a nixery workflow, the registry its image is
 * composed on (`limits.nixery`; without it a set `limits.images` holds the composed image). Pure. The caller's
 * overrides (flags, serve's `overrides`) are held by applyOverrideLimits.
 */
export function applyLimits(workflow: Workflow, source: RunnerConfigSource, nixery?: NixeryImage): LimitedWorkflow {
  const limits = source.config.limits;
  const errors: WorkflowIssue[] = [];
  const clamped: WorkflowIssue[] = [];
  const clamps: LimitClamp[] = [];
  const clamp = limits.onExceed === "clamp";
  const top: SourcePosition = { line: 1, column: 1 };
  /** The value, or the limit when the value is over it (clamp) or undefined (refuse, an error recorded). */
  /** `step`: the step the value is of, named in the message as the run's log numbers steps (from 1), the path being 0-based. */
  function hold<T>(
    value: T,
    over: boolean,
    limit: T,
    at: SourcePosition,
    path: string,
    setting: string,
    show: (v: T) => string,
    step?: string,
  ): T | undefined {
    if (!over) return value;
    const named = describeSetting(source, `limits.${setting} ${show(limit)}`);
    const of = step === undefined ? "" : `${step}: `;
    if (clamp) {
      clamped.push(
        makeIssue(
          workflow.file,
          at,
          path,
          `${of}${show(value)} is over ${named}: clamped to ${show(limit)} (onExceed: clamp)`,
        ),
      );
      clamps.push({
        path,
        value: show(value),
        limit: show(limit),
        setting: `limits.${setting}`,
        at: `${workflow.file}:${at.line}:${at.column}`,
      });
      return limit;
    }
    errors.push(
      makeIssue(
        workflow.file,
        at,
        path,
        `${of}${show(value)} is over ${named}; ask for at most ${show(limit)}, or the operator sets limits.onExceed: clamp`,
      ),
    );
    return undefined;
  }
  const resources: { cpu?: string; memory?: string } = {};
  for (const [kind, setting] of [
    ["cpu", "maxCpu"],
    ["memory", "maxMemory"],
  ] as const) {
    const value = workflow.resources[kind];
    if (value === undefined) continue;
    const limit = kind === "cpu" ? limits.maxCpu : limits.maxMemory;
    const over = limit !== undefined && parseQuantity(value)! > parseQuantity(limit)!;
    const held = hold(
      value,
      over,
      limit ?? value,
      workflow.resourcesAt?.[kind] ?? top,
      `resources.${kind}`,
      setting,
      String,
    );
    if (held !== undefined) resources[kind] = held;
  }
  const maxTimeout = limits.maxTimeoutMs;
  const holdTimeout = (
    value: number | undefined,
    at: SourcePosition,
    path: string,
    step?: string,
  ): number | undefined =>
    value === undefined || maxTimeout === undefined
      ? value
      : hold(value, value > maxTimeout, maxTimeout, at, path, "maxTimeout", formatDuration, step);
  const timeoutMs = holdTimeout(workflow.timeoutMs, workflow.timeoutPosition ?? top, "timeout");
  const stepTimeoutsMs = workflow.steps.map((step, index) =>
    holdTimeout(step.timeoutMs, step.position, `steps[${index}].timeout`, describeStep(index, step.name)),
  );
  if (
    workflow.engine !== "microvm" &&
    workflow.image !== undefined &&
    limits.images !== undefined &&
    !limits.images.some((pattern) => matchImagePattern(pattern, workflow.image!))
  ) {
    errors.push(
      makeIssue(
        workflow.file,
        workflow.imagePosition ?? top,
        "image",
        `${workflow.image} matches none of the images ${describeSetting(source, "limits.images")} allows (${limits.images.join(", ")})`,
      ),
    );
  }
  for (const [index, service] of (workflow.services ?? []).entries()) {
    if (limits.images === undefined || limits.images.some((pattern) => matchImagePattern(pattern, service.image)))
      continue;
    errors.push(
      makeIssue(
        workflow.file,
        service.imagePosition,
        `services[${index}].image`,
        `${service.image} matches none of the images ${describeSetting(source, "limits.images")} allows (${limits.images.join(", ")})`,
      ),
    );
  }
  if (nixery !== undefined) {
    const path = workflow.engineFrom === "dependencies" ? "dependencies.nixpkgs" : "engine";
    if (limits.nixery !== undefined && !limits.nixery.some((pattern) => matchImagePattern(pattern, nixery.base))) {
      errors.push(
        makeIssue(
          workflow.file,
          workflow.enginePosition,
          path,
          `the image is composed on the Nixery registry ${nixery.base}, which matches none of the registries ${describeSetting(source, "limits.nixery")} allows (${limits.nixery.join(", ")})`,
        ),
      );
    } else if (
      limits.nixery === undefined &&
      limits.images !== undefined &&
      !limits.images.some((pattern) => matchImagePattern(pattern, nixery.image))
    ) {
      errors.push(
        makeIssue(
          workflow.file,
          workflow.enginePosition,
          path,
          `the composed Nixery image ${nixery.image} matches none of the images ${describeSetting(source, "limits.images")} allows (${limits.images.join(", ")}); the operator allows Nixery registries with limits.nixery`,
        ),
      );
    }
  }
  return { errors, clamped, clamps, resources, ...(timeoutMs !== undefined ? { timeoutMs } : {}), stepTimeoutsMs };
}

export type { LimitClamp } from "../workflow/workflow-summary.js";
