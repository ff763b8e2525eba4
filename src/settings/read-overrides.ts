// The caller's overrides of workflow fields (run's flags, serve's `overrides`), validated and named as the caller names them.
import { readDuration } from "../core/duration.js";
import { InputError } from "../core/errors.js";
import { IMAGE, QUANTITY } from "../core/patterns.js";
import { checkResourceBounds } from "../workflow/resource-bounds.js";
import type { OverrideNames } from "./hold-overrides.js";
import type { RunOverrides } from "./plan-workflow-run.js";

/** The overrides as the caller got them: text, unvalidated. */
export interface RawOverrides {
  readonly image?: string;
  readonly cpu?: string;
  readonly memory?: string;
  readonly timeout?: string;
  readonly stepTimeout?: string;
}

/**
 * Reads the overrides: an image reference, Kubernetes quantities within the bounds any run may ask for, durations.
 * Throws InputError naming the override as `names` say (`--cpu`, `overrides.cpu`). Not yet held to the runner
 * configuration's limits (holdOverrides does that).
 */
export function readOverrides(raw: RawOverrides, names: OverrideNames): RunOverrides {
  if (raw.image !== undefined && !IMAGE.test(raw.image))
    throw new InputError(
      `${names.image} expects an image reference such as busybox:1.36, got ${JSON.stringify(raw.image)}`,
    );
  for (const key of ["cpu", "memory"] as const) {
    const value = raw[key];
    if (value === undefined) continue;
    if (!QUANTITY.test(value))
      throw new InputError(
        `${names[key]} expects a Kubernetes quantity such as 500m, 1 or 512Mi, got ${JSON.stringify(value)}`,
      );
    const problem = checkResourceBounds(key, value);
    if (problem !== undefined) throw new InputError(`${names[key]}: ${problem}`);
  }
  return {
    ...(raw.image !== undefined ? { image: raw.image } : {}),
    ...(raw.cpu !== undefined ? { cpu: raw.cpu } : {}),
    ...(raw.memory !== undefined ? { memory: raw.memory } : {}),
    ...(raw.timeout !== undefined ? { timeoutMs: readDuration(raw.timeout, names.timeoutMs) } : {}),
    ...(raw.stepTimeout !== undefined ? { stepTimeoutMs: readDuration(raw.stepTimeout, names.stepTimeoutMs) } : {}),
  };
}
