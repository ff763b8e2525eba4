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
export function setCondition(
  conditions: Condition[] | undefined,
  type: string,
  status: "True" | "False",
  reason?: string,
  message?: string,
): Condition[] {
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
export function buildContainerStatus(
  spec: { name: string; image: string },
  container: PodmanContainer | undefined,
): object {
  const base = {
    name: spec.name,
    image: spec.image,
    imageID: `${spec.image}@local`,
    restartCount: 0,
    started: false,
    ready: false,
  };
  if (
    !container ||
    container.state === "created" ||
    container.state === "configured" ||
    container.state === "initialized"
  ) {
    return { ...base, state: { waiting: { reason: "ContainerCreating" } }, lastState: {} };
  }
  const containerID = `podman://${container.id}`;
  if (container.state === "running" || container.state === "paused") {
    return {
      ...base,
      containerID,
      started: true,
      ready: true,
      state: { running: { startedAt: unixToTimestamp(container.startedAt) } },
      lastState: {},
    };
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
  if (terminated.length === statuses.length)
    return terminated.every((s) => s.state.terminated.exitCode === 0) ? "Succeeded" : "Failed";
  if (statuses.some((s) => s.state?.running || s.state?.terminated)) return "Running";
  return "Pending";
}

/**
 * A container's readiness as its readinessProbe last found it: true or false; undefined when it has no probe (or
 * none has run yet, which counts as not ready for a container with one).
 */
export type ProbeResults = (containerName: string) => boolean | undefined;

/** A running container with a readinessProbe is ready only once its probe passed, as a kubelet reports it. */
function applyProbe(spec: any, status: any, probes: ProbeResults): any {
  if (!spec.readinessProbe || !status.ready) return status;
  return { ...status, ready: probes(spec.name) === true };
}

/**
 * Applies podman's container states to a pod's status in place; returns the new phase. Native sidecars (init
 * containers with restartPolicy Always) get initContainerStatuses and count for Ready, not for the phase.
 */
export function applyContainerStates(
  pod: KubeObject,
  byName: (containerName: string) => PodmanContainer | undefined,
  probes: ProbeResults = () => undefined,
): string {
  const statuses = (pod.spec?.containers ?? []).map((c: any) =>
    applyProbe(c, buildContainerStatus(c, byName(c.name)), probes),
  );
  const sidecars = (pod.spec?.initContainers ?? []).filter((c: any) => c.restartPolicy === "Always");
  const sidecarStatuses = sidecars.map((c: any) => applyProbe(c, buildContainerStatus(c, byName(c.name)), probes));
  const phase = derivePodPhase(statuses);
  const allReady = statuses.length > 0 && [...statuses, ...sidecarStatuses].every((s: any) => s.ready);
  const status = pod.status ?? {};
  status.phase = phase;
  status.containerStatuses = statuses;
  if (sidecars.length > 0) status.initContainerStatuses = sidecarStatuses;
  let conditions = setCondition(
    status.conditions,
    "PodReadyToStartContainers",
    phase === "Succeeded" || phase === "Failed" ? "False" : "True",
  );
  conditions = setCondition(conditions, "Initialized", "True");
  const notReadyReason = phase === "Succeeded" || phase === "Failed" ? "PodCompleted" : "ContainersNotReady";
  conditions = setCondition(conditions, "Ready", allReady ? "True" : "False", allReady ? undefined : notReadyReason);
  conditions = setCondition(
    conditions,
    "ContainersReady",
    allReady ? "True" : "False",
    allReady ? undefined : notReadyReason,
  );
  conditions = setCondition(conditions, "PodScheduled", "True");
  status.conditions = conditions;
  pod.status = status;
  return phase;
}
