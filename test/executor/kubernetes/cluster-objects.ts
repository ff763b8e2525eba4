// Pod and Event JSON as the API server returns them, and the kubectl replies that carry them, for executor tests.
import type { IPod } from "kubernetes-models/v1/Pod";
import type { ScriptedReply } from "../../support/scripted-kubectl.js";

export const POD_NAME = "knotless-run-42-x7k2p";
export const NODE_NAME = "node-a";

/** The pod template's labels, as the Job gives them to its pod. */
const LABELS = { "app.kubernetes.io/managed-by": "knotless-runner-k8s", "knotless.dev/run-id": "42" };

function basePod(name: string): IPod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "ci", labels: LABELS, creationTimestamp: "2024-05-01T10:00:00Z" },
  };
}

/** A pod whose container runs. */
export function runningPod(name = POD_NAME, node = NODE_NAME): IPod {
  return {
    ...basePod(name),
    spec: { nodeName: node, containers: [{ name: "run", image: "busybox:1.36" }] },
    status: {
      phase: "Running",
      containerStatuses: [
        {
          name: "run",
          image: "busybox:1.36",
          imageID: "",
          ready: true,
          restartCount: 0,
          state: { running: { startedAt: "2024-05-01T10:00:05Z" } },
        },
      ],
    },
  };
}

/** A Pending pod: waiting with a container reason, or not scheduled (PodScheduled False), or neither. */
export function pendingPod(
  options: { waiting?: { reason: string; message?: string }; unschedulable?: { reason: string; message: string } } = {},
  name = POD_NAME,
): IPod {
  return {
    ...basePod(name),
    spec: { containers: [{ name: "run", image: "busybox:1.36" }] },
    status: {
      phase: "Pending",
      ...(options.unschedulable
        ? { conditions: [{ type: "PodScheduled", status: "False", ...options.unschedulable }] }
        : {}),
      ...(options.waiting
        ? {
            containerStatuses: [
              {
                name: "run",
                image: "busybox:1.36",
                imageID: "",
                ready: false,
                restartCount: 0,
                state: { waiting: options.waiting },
              },
            ],
          }
        : {}),
    },
  };
}

/** A pod that ended (Failed, Succeeded, Unknown) with the pod-level reason and message. */
export function endedPod(
  phase: "Failed" | "Succeeded" | "Unknown",
  reason?: string,
  message?: string,
  name = POD_NAME,
): IPod {
  return {
    ...basePod(name),
    spec: { nodeName: NODE_NAME, containers: [{ name: "run", image: "busybox:1.36" }] },
    status: { phase, ...(reason ? { reason } : {}), ...(message ? { message } : {}) },
  };
}

/** A running pod that is being deleted. */
export function deletingPod(name = POD_NAME): IPod {
  const pod = runningPod(name);
  return { ...pod, metadata: { ...pod.metadata, deletionTimestamp: "2024-05-01T10:05:00Z" } };
}

/** `get pods -o json`: a PodList of these pods. */
export function podList(...pods: IPod[]): ScriptedReply {
  return { stdout: JSON.stringify({ apiVersion: "v1", kind: "PodList", metadata: {}, items: pods }) };
}

/** `get events -o json`: an EventList, each event as [reason, message, lastTimestamp]. */
export function eventList(...events: Array<readonly [string, string, string]>): ScriptedReply {
  const items = events.map(([reason, message, lastTimestamp], i) => ({
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: `e${i}`, namespace: "ci" },
    reason,
    message,
    lastTimestamp,
    type: "Normal",
  }));
  return { stdout: JSON.stringify({ apiVersion: "v1", kind: "EventList", metadata: {}, items }) };
}

/** A failed kubectl call printing `stderr`. */
export function failure(stderr: string, exitCode = 1): ScriptedReply {
  return { exitCode, stderr: `${stderr}\n` };
}

export const UNREACHABLE = "Unable to connect to the server: dial tcp 10.0.0.1:443: connect: connection refused";
export const INTERNAL_ERROR =
  "Error from server (InternalError): Internal error occurred: etcdserver: request timed out";
export const FORBIDDEN =
  'Error from server (Forbidden): pods is forbidden: User "ci" cannot list resource "pods" in API group "" in the namespace "ci"';
export const UPGRADE_REFUSED = 'error: unable to upgrade connection: container not found ("run")';
export const DIALING_BACKEND =
  "Error from server: error dialing backend: dial tcp 10.0.0.7:10250: connect: connection refused";
