// Reads one service's container status from the run's pod: ready, still coming up, or failed for good. Pure.
import type { IPod } from "kubernetes-models/v1/Pod";

export type ServiceState =
  | { readonly kind: "ready" }
  | { readonly kind: "waiting"; readonly detail: string }
  | { readonly kind: "failed"; readonly detail: string };

/** Waiting reasons a service does not recover from while the run waits (a bad image, a container that keeps crashing). */
const FATAL_WAITING = new Set([
  "CrashLoopBackOff",
  "ImagePullBackOff",
  "InvalidImageName",
  "ErrImageNeverPull",
  "CreateContainerConfigError",
  "CreateContainerError",
  "RunContainerError",
]);

/**
 * The service's state from its container status: an init container's (a native sidecar) or a container's of that
 * name. A service that exited, or restarted after exiting (a native sidecar is restarted), has failed: a run
 * cannot count on it.
 */
export function classifyService(pod: IPod | undefined, name: string): ServiceState {
  const status =
    pod?.status?.initContainerStatuses?.find((s) => s.name === name) ??
    pod?.status?.containerStatuses?.find((s) => s.name === name);
  if (status === undefined) return { kind: "waiting", detail: "its container is not created yet" };
  const terminated = status.state?.terminated ?? (status.restartCount > 0 ? status.lastState?.terminated : undefined);
  if (terminated)
    return {
      kind: "failed",
      detail: `its container exited with code ${terminated.exitCode}${terminated.reason ? ` (${terminated.reason})` : ""}`,
    };
  const waiting = status.state?.waiting;
  if (waiting?.reason && FATAL_WAITING.has(waiting.reason))
    return { kind: "failed", detail: `${waiting.reason}${waiting.message ? `: ${waiting.message}` : ""}` };
  if (status.ready) return { kind: "ready" };
  if (waiting) return { kind: "waiting", detail: `waiting: ${waiting.reason ?? "no reason given"}` };
  return {
    kind: "waiting",
    detail: status.state?.running ? "running, its readiness check not passed yet" : "not running yet",
  };
}
