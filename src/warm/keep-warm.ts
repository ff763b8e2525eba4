// `run --keep-warm`: after the run's Job is deleted, leave a placeholder of the run's size that holds its node.
import { formatDuration } from "../core/duration.js";
import { describeError } from "../core/errors.js";
import type { PodSpecConfig } from "../manifests/pod-spec-config.js";
import type { WarmDeps } from "./warm-deps.js";
import { topUpPlaceholders } from "./top-up.js";

export interface KeepWarmSpec {
  readonly seconds: number;
  readonly maxWarm: number;
  readonly cpu: string;
  readonly memory: string;
  readonly image: string;
  /** The run's pod keys: the placeholder goes where the run's pods go (WarmSpec.pod). */
  readonly pod?: PodSpecConfig;
}

/**
 * Makes sure one placeholder of the run's size lasts about `seconds` from now: a placeholder with at least half of
 * that left already does; otherwise one is made in a free slot, or, when --max-warm leaves none, the one that would
 * end first is replaced. Never throws: the run's verdict does not depend on it; `ok` and `detail` say what happened.
 */
export async function leaveWarmPlaceholder(
  deps: WarmDeps,
  spec: KeepWarmSpec,
): Promise<{ readonly ok: boolean; readonly detail: string }> {
  try {
    const report = await topUpPlaceholders(deps, { ...spec, count: 1, freshForMs: (spec.seconds * 1000) / 2 });
    if (report.created.length > 0)
      return {
        ok: true,
        detail: `left warm placeholder ${report.created.join(", ")} for ${formatDuration(spec.seconds * 1000)} (${report.detail})`,
      };
    return { ok: true, detail: `left no new warm placeholder: ${report.detail}` };
  } catch (error) {
    return { ok: false, detail: `could not leave a warm placeholder: ${describeError(error)}` };
  }
}
