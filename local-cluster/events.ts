// Records v1 Events about pods and jobs in the store, merging repeats into one Event with a count.

import { randomBytes } from "node:crypto";
import type { ObjectStore } from "./store.js";
import { formatTimestamp } from "./time.js";
import type { KubeObject } from "./types.js";

export type EventType = "Normal" | "Warning";

export interface EventRecorder {
  record(about: KubeObject, type: EventType, reason: string, message: string, component?: string): void;
}

/** Events kept per namespace; the oldest go first, as the API server's event TTL would remove them. */
const MAX_EVENTS_PER_NAMESPACE = 2000;

export function createEventRecorder(store: ObjectStore): EventRecorder {
  return {
    record(about, type, reason, message, component = "kubelet") {
      const ns = about.metadata.namespace ?? "default";
      const now = formatTimestamp();
      const all = store.list("events", ns);
      for (const old of all.slice(0, Math.max(0, all.length - MAX_EVENTS_PER_NAMESPACE + 1)))
        store.remove("events", ns, old.metadata.name);
      const existing = all.find(
        (e) => e.involvedObject?.uid === about.metadata.uid && e.reason === reason && e.message === message,
      );
      if (existing) {
        store.mutate("events", ns, existing.metadata.name, (e) => {
          e.count = (e.count ?? 1) + 1;
          e.lastTimestamp = now;
        });
        return;
      }
      store.create("events", {
        apiVersion: "v1",
        kind: "Event",
        metadata: {
          name: `${about.metadata.name}.${randomBytes(8).toString("hex")}`,
          namespace: ns,
          uid: "",
          resourceVersion: "",
          creationTimestamp: "",
        },
        involvedObject: {
          apiVersion: about.apiVersion,
          kind: about.kind,
          name: about.metadata.name,
          namespace: ns,
          uid: about.metadata.uid,
          resourceVersion: about.metadata.resourceVersion,
        },
        reason,
        message,
        type,
        source: { component, ...(component === "kubelet" ? { host: "local-node-1" } : {}) },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
        reportingComponent: component,
        reportingInstance: component === "kubelet" ? "local-node-1" : "",
      });
    },
  };
}
