// Reads a pod's JSON into the few states the runner acts on: a pure function.
import { RUN_CONTAINER } from "./names.js";
import type { IPod } from "kubernetes-models/v1/Pod";
import { describeIdleStop, IDLE_EXIT_CODE } from "../pod/keep-alive.js";
import { POD_IDLE_TIMEOUT_ANNOTATION } from "./labels.js";

/** The reason given for a pod its idle guard stopped (src/pod/keep-alive.ts). */
export const IDLE_STOP_REASON = "RunnerIdle";

export type PodState =
  | { readonly kind: "absent" }
  | {
      readonly kind: "pending";
      readonly phase: string;
      readonly reason?: string;
      readonly message?: string;
      readonly name: string;
    }
  | { readonly kind: "running"; readonly name: string; readonly node: string }
  /** A waiting reason that will not cure itself (image pull failures after their grace, bad config). */
  | { readonly kind: "stuck"; readonly name: string; readonly reason: string; readonly message: string }
  /** The pod ended or is being deleted: it will never run a step again. */
  | { readonly kind: "gone"; readonly name: string; readonly reason: string; readonly message: string };

/** Waiting reasons that fail the run at once. */
const FATAL_WAITING = new Set([
  "InvalidImageName",
  "CreateContainerConfigError",
  "CreateContainerError",
  "ErrImageNeverPull",
  "RunContainerError",
]);
/** Waiting reasons that fail the run once they persisted for the image-pull grace. */
const IMAGE_PULL_WAITING = new Set(["ErrImagePull", "ImagePullBackOff"]);

/** The scheduler's words for a claim the pod names that it cannot bind (the VolumeBinding plugin). */
const UNUSABLE_CLAIM = /persistentvolumeclaim "([^"]+)" (not found|is being deleted)/;

/** The run container's status: the kubelet lists statuses by container name, so with a sidecar ("docker") it is not the first. */
function findRunContainerStatus(
  pod: IPod,
): NonNullable<NonNullable<IPod["status"]>["containerStatuses"]>[number] | undefined {
  const statuses = pod.status?.containerStatuses ?? [];
  return statuses.find((status) => status.name === RUN_CONTAINER) ?? statuses[0];
}

type ContainerWaiting = NonNullable<
  NonNullable<NonNullable<NonNullable<IPod["status"]>["containerStatuses"]>[number]["state"]>["waiting"]
>;

/**
 * The waiting state that keeps the pod from running: the run container's, else that of a service container (a
 * native sidecar or a container beside it) that cannot start, named, since with a sidecar that cannot pull its image
 * the run container only ever waits.
 */
function findBlockingWait(pod: IPod): { readonly waiting: ContainerWaiting; readonly container?: string } | undefined {
  const own = findRunContainerStatus(pod)?.state?.waiting;
  if (own?.reason && (FATAL_WAITING.has(own.reason) || IMAGE_PULL_WAITING.has(own.reason))) return { waiting: own };
  const others = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].filter(
    (status) => status.name !== RUN_CONTAINER,
  );
  for (const status of others) {
    const waiting = status.state?.waiting;
    if (waiting?.reason && (FATAL_WAITING.has(waiting.reason) || IMAGE_PULL_WAITING.has(waiting.reason)))
      return { waiting, container: status.name };
  }
  return own ? { waiting: own } : undefined;
}

/** Picks the run's pod from a PodList's items: the newest one (there is only one with backoffLimit 0). */
export function pickRunPod(items: readonly IPod[]): IPod | undefined {
  return [...items].sort((a, b) =>
    (b.metadata?.creationTimestamp ?? "").localeCompare(a.metadata?.creationTimestamp ?? ""),
  )[0];
}

/**
 * Classifies the pod. `imagePullFailingSinceMs` is how long an image pull failure has been seen (the caller keeps
 * that clock); it turns into `stuck` past `imagePullGraceMs`.
 */
export function classifyPod(pod: IPod | undefined, imagePullFailingForMs: number, imagePullGraceMs: number): PodState {
  if (!pod) return { kind: "absent" };
  const name = pod.metadata?.name ?? "";
  const phase = pod.status?.phase ?? "Pending";
  const container = findRunContainerStatus(pod);
  if (pod.metadata?.deletionTimestamp)
    return { kind: "gone", name, reason: "Deleted", message: "the pod is being deleted" };
  if (phase === "Succeeded" || phase === "Failed" || phase === "Unknown") return gone(name, pod);
  const blocking = findBlockingWait(pod);
  const waiting = blocking?.waiting;
  const of = blocking?.container === undefined ? "" : `container ${blocking.container}: `;
  if (waiting?.reason && FATAL_WAITING.has(waiting.reason)) {
    return { kind: "stuck", name, reason: waiting.reason, message: `${of}${waiting.message ?? waiting.reason}` };
  }
  if (waiting?.reason && IMAGE_PULL_WAITING.has(waiting.reason) && imagePullFailingForMs >= imagePullGraceMs) {
    return { kind: "stuck", name, reason: waiting.reason, message: `${of}${waiting.message ?? waiting.reason}` };
  }
  if (container?.state?.terminated) return gone(name, pod);
  if (phase === "Running" && container?.state?.running) {
    return { kind: "running", name, node: pod.spec?.nodeName ?? "" };
  }
  const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled");
  const claim = scheduled?.status === "False" ? UNUSABLE_CLAIM.exec(scheduled.message ?? "") : null;
  if (claim) {
    // No node rental cures it: the scheduler waits for the claim, and the run would wait out its pod timeout.
    const why = claim[2] === "not found" ? "does not exist in the run's namespace" : "is being deleted";
    return {
      kind: "stuck",
      name,
      reason: "ClaimUnusable",
      message: `its PersistentVolumeClaim ${claim[1]} ${why} (create it, or run without --cache-pvc): ${scheduled?.message ?? ""}`,
    };
  }
  const reason = waiting?.reason ?? (scheduled?.status === "False" ? scheduled.reason : undefined);
  const message = waiting?.message ?? (scheduled?.status === "False" ? scheduled.message : undefined);
  return { kind: "pending", name, phase, ...(reason ? { reason } : {}), ...(message ? { message } : {}) };
}

function gone(name: string, pod: IPod): PodState {
  const end = describePodEnd(pod);
  return {
    kind: "gone",
    name,
    reason: end.reason,
    message: end.message ?? `the pod is ${pod.status?.phase ?? "Terminated"}`,
  };
}

/** True when the run container, or a service container, reports an image pull failure right now. */
export function isImagePullFailing(pod: IPod | undefined): boolean {
  const reason = pod ? findBlockingWait(pod)?.waiting.reason : undefined;
  return reason !== undefined && IMAGE_PULL_WAITING.has(reason);
}

/**
 * Why a pod whose run container ended (or that Failed, Succeeded, went Unknown) ended: the runner's own words when
 * its idle guard stopped it (the run container's exit code 75, the timeout from the pod's annotation), else the
 * cluster's reason and message (an eviction's, say), else the container's exit code.
 */
export function describePodEnd(pod: IPod): { readonly reason: string; readonly message: string | undefined } {
  const terminated = pod.status?.containerStatuses?.[0]?.state?.terminated;
  if (terminated?.exitCode === IDLE_EXIT_CODE && !pod.status?.reason) {
    const seconds = Number(pod.metadata?.annotations?.[POD_IDLE_TIMEOUT_ANNOTATION]);
    return {
      reason: IDLE_STOP_REASON,
      message: describeIdleStop(Number.isSafeInteger(seconds) && seconds > 0 ? seconds : undefined),
    };
  }
  const phase = pod.status?.phase ?? "Terminated";
  const reason = pod.status?.reason ?? terminated?.reason ?? phase;
  const message =
    pod.status?.message ??
    terminated?.message ??
    (terminated ? `the container exited with code ${terminated.exitCode}` : undefined);
  return { reason, message };
}
