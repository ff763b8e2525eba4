// Puts the operator's pod keys (`pod` of --config) into a pod spec the runner built: placement, pull secrets, then podSpecPatch.
import type { IPodSpec } from "kubernetes-models/v1/PodSpec";
import type { PodSpecConfig } from "./pod-spec-config.js";
import { applyPodSpecPatch } from "./strategic-merge.js";

/**
 * Where the pod may go and what it pulls with: nodeSelector (the spec's own keys, a workflow's architecture, win),
 * runtimeClassName (the spec's own, the microvm engine's, wins), tolerations, affinity, priorityClassName and
 * imagePullSecrets. A warm placeholder gets these too, so that it holds a node of the pool its runs go to.
 */
export function applyOperatorPlacement<T extends IPodSpec>(pod: PodSpecConfig, spec: T): T {
  const nodeSelector = { ...pod.nodeSelector, ...spec.nodeSelector };
  const runtimeClassName = spec.runtimeClassName ?? pod.runtimeClassName;
  return {
    ...spec,
    ...(Object.keys(nodeSelector).length > 0 ? { nodeSelector } : {}),
    ...(runtimeClassName !== undefined ? { runtimeClassName } : {}),
    ...(pod.tolerations !== undefined ? { tolerations: pod.tolerations.map((toleration) => ({ ...toleration })) } : {}),
    ...(pod.affinity !== undefined ? { affinity: structuredClone(pod.affinity) } : {}),
    ...(pod.priorityClassName !== undefined ? { priorityClassName: pod.priorityClassName } : {}),
    ...(pod.imagePullSecrets !== undefined ? { imagePullSecrets: pod.imagePullSecrets.map((name) => ({ name })) } : {}),
  };
}

/** The run pod's spec with the operator's placement and, last, `podSpecPatch` (checked when read: it spares the runner's parts). Pure. */
export function applyOperatorPodConfig(pod: PodSpecConfig, spec: IPodSpec): IPodSpec {
  const placed = applyOperatorPlacement(pod, spec);
  return pod.podSpecPatch ? applyPodSpecPatch(placed, pod.podSpecPatch) : placed;
}
