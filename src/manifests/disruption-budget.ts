// Builds the run's policy/v1 PodDisruptionBudget: maxUnavailable 0 for the run's pod, owned by the run's Job; a pure function.
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, RUN_ID_ANNOTATION, RUN_ID_LABEL } from "./labels.js";

export interface DisruptionBudgetInput {
  /** The run's Job: the budget takes its name (another kind, so no clash) and, with its uid, its owner reference. */
  readonly jobName: string;
  /** The Job's uid as the create answered it; absent: no owner reference (teardown and gc still delete the budget). */
  readonly jobUid?: string;
  /** Absent: the manifest names no namespace (the transport's, as the Job's). */
  readonly namespace?: string;
  readonly runId: string;
  readonly runIdLabel: string;
}

/**
 * The budget that makes an eviction (a node drain, the autoscaler's scale-down) of the run's pod wait for the run:
 * it selects the pod by the labels the Job's template gives it and allows none of it to be unavailable. The owner
 * reference lets the server's garbage collector remove the budget with the Job (a Job deleted by its TTL or by gc);
 * no blockOwnerDeletion, which would need a permission on the Job's finalizers.
 */
export function buildDisruptionBudget(input: DisruptionBudgetInput): IPodDisruptionBudget {
  const selector = { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [RUN_ID_LABEL]: input.runIdLabel };
  return {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: {
      name: input.jobName,
      ...(input.namespace !== undefined ? { namespace: input.namespace } : {}),
      labels: { ...selector },
      annotations: { [RUN_ID_ANNOTATION]: input.runId },
      ...(input.jobUid
        ? { ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: input.jobName, uid: input.jobUid }] }
        : {}),
    },
    spec: { maxUnavailable: 0, selector: { matchLabels: selector } },
  };
}
