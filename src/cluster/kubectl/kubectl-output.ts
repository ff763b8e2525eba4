// Pure readers of what kubectl prints for apply and delete: which object each line names, and what was done to it.
import type { ApplyAction } from "../cluster.js";

/** `serviceaccount/NAME created`, one per object, as kubectl apply prints them: reference → action. */
export function parseApplyOutput(stdout: string): Map<string, ApplyAction> {
  const actions = new Map<string, ApplyAction>();
  for (const line of stdout.split("\n")) {
    const match = /^(\S+) (created|configured|unchanged)$/.exec(line.trim());
    if (match) actions.set(match[1]!, match[2] as ApplyAction);
  }
  return actions;
}

/** `rolebinding.rbac.authorization.k8s.io "NAME" deleted` (any suffix), as kubectl delete prints them: the references, `TYPE/NAME`. */
export function parseDeleteOutput(stdout: string): Set<string> {
  const deleted = new Set<string>();
  for (const line of stdout.split("\n")) {
    const match = /^(\S+) "([^"]+)" deleted\b/.exec(line.trim());
    if (match) deleted.add(`${match[1]}/${match[2]}`);
  }
  return deleted;
}
