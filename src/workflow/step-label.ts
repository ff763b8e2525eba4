// How every message names a step: numbered as the run's log numbers steps (from 1), with the step's name.

/**
 * Step `index` (0-based, as events, log.ndjson and result.json count) as a message names it: `step 1 (build)`, or
 * `step 1` when the name is not known there. YAML key paths (`steps[0].timeout`) stay 0-based beside it.
 */
export function describeStep(index: number, name?: string): string {
  return name === undefined || name === "" ? `step ${index + 1}` : `step ${index + 1} (${name})`;
}
