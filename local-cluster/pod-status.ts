// Pure builders of Pod status blocks (conditions, container statuses, phase) from what podman reports.

import type { PodmanContainer } from "./podman.js";
import { formatTimestamp } from "./time.js";
import type { KubeObject } from "./types.js";

export interface Condition {
  type: string;
  status: "True" | "False";
  lastProbeTime: null;
  lastTransitionTime: string;
  reason?: string;
  message?: string;
}

/** Sets a condition, keeping its transition time when the status did not change. */
export function setCondition(conditions: Condition[] | undefined, type: string, status: "True" | "False", reason?: string, message?: string): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === type);
  const prev = i >= 0 ? list[i] : undefined;
  const next: Condition = {
    type,
    status,
    lastProbeTime: null,
    lastTransitionTime: prev && prev.status === status ? prev.lastTransitionTime : formatTimestamp(),
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
  };
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
}

function unixToTimestamp(seconds: number): string {
  return formatTimestamp(new Date(seconds * 1000));
}

/** One containerStatuses entry from the podman container (absent = still being created). */
export function buildContainerStatus(spec: { name: string; image: string }, container: PodmanContainer | undefined): object {
  const base = { name: spec.name, image: spec.image, imageID: `${spec.image}@local`, restartCount: 0, started: false, ready: false };
  if (!container || container.state === "created" || container.state === "configured" || container.state === "initialized") {
    return { ...base, state: { waiting: { reason: "ContainerCreating" } }, lastState: {} };
  }
  const containerID = `podman://${container.id}`;
  if (container.state === "running" || container.state === "paused") {
    return { ...base, containerID, started: true, ready: true, state: { running: { startedAt: unixToTimestamp(container.startedAt) } }, lastState: {} };
  }
  return {
    ...base,
    containerID,
    state: {
      terminated: {
        exitCode: container.exitCode,
        reason: container.exitCode === 0 ? "Completed" : "Error",
        startedAt: unixToTimestamp(container.startedAt),
        finishedAt: unixToTimestamp(container.exitedAt > 0 ? container.exitedAt : Date.now() / 1000),
        containerID,
      },
    },
    lastState: {},
  };
}

/** The pod phase implied by its container statuses (restartPolicy Never semantics). */
export function derivePodPhase(statuses: readonly any[]): "Pending" | "Running" | "Succeeded" | "Failed" {
  if (statuses.length === 0) return "Pending";
  const terminated = statuses.filter((s) => s.state?.terminated);
  if (terminated.length === statuses.length) return terminated.every((s) => s.state.terminated.exitCode === 0) ? "Succeeded" : "Failed";
  if (statuses.some((s) => s.state?.running || s.state?.terminated)) return "Running";
  return "Pending";
}

/** Applies podman's container states to a pod's status in place; returns the new phase. */
export function applyContainerStates(pod: KubeObject, byName: (containerName: string) => PodmanContainer | undefined): string {
  const statuses = (pod.spec?.containers ?? []).map((c: any) => buildContainerStatus(c, byName(c.name)));
  const phase = derivePodPhase(statuses);
  const allReady = statuses.length > 0 && statuses.every((s: any) => s.ready);
  const status = pod.status ?? {};
  status.phase = phase;
  status.containerStatuses = statuses;
  let conditions = setCondition(status.conditions, "PodReadyToStartContainers", phase === "Succeeded" || phase === "Failed" ? "False" : "True");
  conditions = setCondition(conditions, "Initialized", "True");
  const notReadyReason = phase === "Succeeded" || phase === "Failed" ? "PodCompleted" : "ContainersNotReady";
  conditions = setCondition(conditions, "Ready", allReady ? "True" : "False", allReady ? undefined : notReadyReason);
  conditions = setCondition(conditions, "ContainersReady", allReady ? "True" : "False", allReady ? undefined : notReadyReason);
  conditions = setCondition(conditions, "PodScheduled", "True");
  status.conditions = conditions;
  pod.status = status;
  return phase;
}
