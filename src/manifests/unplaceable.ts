// Tells a pod no node will take (its node selector or affinity matches no node, or the autoscaler will not add one) from one that waits for capacity: pure.
import type { IEvent } from "kubernetes-models/v1/Event";
import type { IPod } from "kubernetes-models/v1/Pod";

/** The cluster autoscaler's word on a pending pod: it is adding a node, or it will not. */
export type AutoscalerVerdict =
  | { readonly kind: "scaling-up"; readonly message: string }
  | { readonly kind: "not-scaling-up"; readonly message: string };

/** "0/N nodes are available: N node(s) didn't match Pod's node affinity/selector": every node fails the pod's selector, none for want of room. */
const ALL_NODES_MISMATCH = /^0\/(\d+) nodes are available: (\d+) node\(s\) didn't match Pod's node affinity\/selector/;
/** NotTriggerScaleUp for want of room in the node group: capacity that frees up when other pods end, so the run waits. */
const CAPACITY_LIMIT = /max node group size reached|max cluster (cpu|memory|nodes?) limit/i;

/** Whether the scheduler says no node's labels let the pod in (and not that the matching nodes are full). */
export function isSelectorMismatch(pod: IPod | undefined): boolean {
  const scheduled = pod?.status?.conditions?.find((condition) => condition.type === "PodScheduled");
  if (scheduled?.status !== "False") return false;
  const match = ALL_NODES_MISMATCH.exec(scheduled.message ?? "");
  return match !== null && Number(match[1]) > 0 && match[1] === match[2];
}

/**
 * The autoscaler's latest TriggeredScaleUp (Karpenter: Nominated) or NotTriggerScaleUp among a pod's events; a NotTriggerScaleUp for want
 * of room in the node group (max size reached) is not a refusal: those nodes free up.
 */
export function findAutoscalerVerdict(events: readonly IEvent[]): AutoscalerVerdict | undefined {
  const stamp = (e: IEvent): string => e.lastTimestamp ?? e.eventTime ?? e.metadata?.creationTimestamp ?? "";
  const latest = [...events]
    .filter((e) => e.reason === "TriggeredScaleUp" || e.reason === "Nominated" || e.reason === "NotTriggerScaleUp")
    .sort((a, b) => stamp(a).localeCompare(stamp(b)))
    .at(-1);
  if (!latest) return undefined;
  const message = latest.message ?? latest.reason ?? "";
  if (latest.reason !== "NotTriggerScaleUp" || CAPACITY_LIMIT.test(message)) return { kind: "scaling-up", message };
  return { kind: "not-scaling-up", message };
}

/**
 * The admission refusal in a Job's latest event (`FailedCreate: Error creating: pods "…" is forbidden: violates
 * PodSecurity …`): the Job controller will never make the pod, so the run fails at once. A refusal for an exceeded
 * ResourceQuota is not one: the quota frees up as other pods end. Undefined when the event is no such refusal.
 */
export function findAdmissionRefusal(jobEvent: string | undefined): string | undefined {
  const match = /^FailedCreate: (?:Error creating: )?(.* is forbidden: .*)$/s.exec(jobEvent ?? "");
  if (!match || /exceeded quota/.test(match[1]!)) return undefined;
  return match[1];
}

/** The pod's node selector and required node affinity in a few words, for the message of a pod no node takes. */
export function describePlacement(pod: IPod | undefined): string {
  const selector = Object.entries(pod?.spec?.nodeSelector ?? {}).map(([key, value]) => `${key}=${value}`);
  const terms =
    pod?.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  const parts = [
    selector.length > 0 ? `node selector ${selector.join(",")}` : "",
    terms.length > 0 ? `required node affinity (${terms.length} term${terms.length === 1 ? "" : "s"})` : "",
  ].filter(Boolean);
  return parts.length > 0 ? parts.join(" and ") : "its placement";
}
