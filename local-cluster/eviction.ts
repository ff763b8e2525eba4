// The pods/eviction subresource: a graceful delete that a PodDisruptionBudget may refuse with 429, as `kubectl drain` meets it.
import { ApiError, buildSuccessStatus } from "./api-error.js";
import type { Deleter } from "./deletion.js";
import type { ObjectStore } from "./store.js";
import type { KubeObject } from "./types.js";

const BUDGETS = "poddisruptionbudgets.policy";

/** Whether a policy/v1 selector (matchLabels; matchExpressions are not read) selects these labels; an empty one selects all. */
function selects(
  selector: { matchLabels?: Record<string, string> } | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  return Object.entries(selector?.matchLabels ?? {}).every(([key, value]) => labels?.[key] === value);
}

/** An int-or-percent of `total`, rounded up as the disruption controller does. */
function scale(value: number | string, total: number): number {
  return typeof value === "number" ? value : Math.ceil((Number.parseInt(value, 10) / 100) * total);
}

const isRunning = (pod: KubeObject): boolean => pod.status?.phase === "Running" && !pod.metadata.deletionTimestamp;

/**
 * Evicts a pod: refused with 429 TooManyRequests when a budget selecting it would fall below what it needs healthy
 * (the disruption controller's arithmetic, on running pods), else deleted gracefully. A pod that does not run
 * (pending, finished) is not counted and may always go.
 */
export function evictPod(store: ObjectStore, deleter: Deleter, namespace: string, name: string, body: unknown): object {
  const pod = store.mustGet("pods", namespace, name);
  if (isRunning(pod)) {
    const pods = store.list("pods", namespace);
    for (const budget of store.list(BUDGETS, namespace)) {
      const spec = (budget.spec ?? {}) as {
        selector?: { matchLabels?: Record<string, string> };
        maxUnavailable?: number | string;
        minAvailable?: number | string;
      };
      if (!selects(spec.selector, pod.metadata.labels)) continue;
      const selected = pods.filter((p) => selects(spec.selector, p.metadata.labels));
      const healthy = selected.filter(isRunning).length;
      const needed =
        spec.maxUnavailable !== undefined
          ? selected.length - scale(spec.maxUnavailable, selected.length)
          : scale(spec.minAvailable ?? 0, selected.length);
      if (healthy - needed <= 0) {
        throw new ApiError(
          429,
          "TooManyRequests",
          "Cannot evict pod as it would violate the pod's disruption budget.",
          {
            causes: [
              {
                reason: "DisruptionBudget",
                message: `The disruption budget ${budget.metadata.name} needs ${needed} healthy pods and has ${healthy} currently`,
              },
            ],
          },
        );
      }
    }
  }
  const grace = (body as { deleteOptions?: { gracePeriodSeconds?: number } } | undefined)?.deleteOptions
    ?.gracePeriodSeconds;
  deleter.delete({ storeKey: "pods", namespace, name, ...(grace === undefined ? {} : { gracePeriodSeconds: grace }) });
  return { ...buildSuccessStatus(), code: 201 };
}
