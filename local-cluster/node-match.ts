// The scheduler's NodeAffinity check: does a pod's nodeSelector (and required node affinity) let it onto a node with these labels.
import type { KubeObject } from "./types.js";

interface Requirement {
  key: string;
  operator: string;
  values?: string[];
}

function meets(labels: Record<string, string>, requirement: Requirement): boolean {
  const has = Object.hasOwn(labels, requirement.key);
  const value = labels[requirement.key];
  switch (requirement.operator) {
    case "In":
      return has && (requirement.values ?? []).includes(value!);
    case "NotIn":
      return !has || !(requirement.values ?? []).includes(value!);
    case "Exists":
      return has;
    case "DoesNotExist":
      return !has;
    case "Gt":
    case "Lt": {
      const [bound] = (requirement.values ?? []).map(Number);
      return (
        has && bound !== undefined && (requirement.operator === "Gt" ? Number(value) > bound : Number(value) < bound)
      );
    }
    default:
      return false;
  }
}

/**
 * Whether the pod may go to a node labelled `labels`: every nodeSelector pair, and one of the required node affinity's
 * terms (each term's matchExpressions all met), as the scheduler's NodeAffinity plugin decides.
 */
export function matchesNode(pod: KubeObject, labels: Record<string, string>): boolean {
  for (const [key, value] of Object.entries<string>(pod.spec?.nodeSelector ?? {}))
    if (labels[key] !== value) return false;
  const terms: Array<{ matchExpressions?: Requirement[] }> | undefined =
    pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms || terms.length === 0) return true;
  return terms.some((term) => (term.matchExpressions ?? []).every((requirement) => meets(labels, requirement)));
}

/** The scheduler's words for a pod no node's labels let in. */
export function describeSelectorMismatch(nodes: number): string {
  return `0/${nodes} nodes are available: ${nodes} node(s) didn't match Pod's node affinity/selector. preemption: 0/${nodes} nodes are available: ${nodes} Preemption is not helpful for scheduling.`;
}
