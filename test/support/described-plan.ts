// The dry run's plans as both transports would make them (kubectl arguments, API requests), for the tests that read them.
import { describePlannedCalls, type DescribedCall } from "../../src/cluster/transports/format-calls.js";
import type { ClusterTarget } from "../../src/cluster/cluster.js";
import { planKubectlCalls, planReleaseCalls, planWarmCalls } from "../../src/dry-run/call-plan.js";
import type { RunSettings } from "../../src/executor/kubernetes/context.js";

/** planKubectlCalls, described against the settings' target. */
export function describeRunPlan(
  settings: RunSettings,
  options?: { readonly heartbeatIntervalMs?: number },
): DescribedCall[] {
  return describePlannedCalls(settings.target, planKubectlCalls(settings, options));
}

/** planWarmCalls, described against `target`. */
export function describeWarmPlan(
  target: ClusterTarget,
  spec: { readonly count: number; readonly maxWarm: number },
): DescribedCall[] {
  return describePlannedCalls(target, planWarmCalls(spec));
}

/** planReleaseCalls, described against `target`. */
export function describeReleasePlan(target: ClusterTarget): DescribedCall[] {
  return describePlannedCalls(target, planReleaseCalls());
}
