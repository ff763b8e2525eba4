// Placeholder Job objects as the API server returns them (started, ready, ended, being deleted), for the warm tests.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import { buildPlaceholderManifest } from "../../src/manifests/placeholder-manifest.js";

/** 2026-01-01T10:00:00Z, the start of every placeholder here unless said otherwise. */
export const STARTED_AT = Date.parse("2026-01-01T10:00:00Z");

export interface PlaceholderJobOptions {
  readonly name?: string;
  readonly cpu?: string;
  readonly memory?: string;
  readonly seconds?: number;
  readonly uid?: string;
  readonly resourceVersion?: string;
  readonly ready?: boolean;
  readonly startedAt?: number;
  readonly ended?: "Failed" | "Complete";
  readonly deleting?: boolean;
}

export function placeholderJob(o: PlaceholderJobOptions = {}): IJob {
  const name = o.name ?? "knotless-warm-0";
  const job = buildPlaceholderManifest({
    name,
    namespace: "ci",
    image: "busybox:1.36",
    cpu: o.cpu ?? "500m",
    memory: o.memory ?? "512Mi",
    seconds: o.seconds ?? 120,
  });
  const startTime = new Date(o.startedAt ?? STARTED_AT).toISOString().replace(/\.\d+Z$/, "Z");
  return {
    ...job,
    metadata: {
      ...job.metadata,
      namespace: "ci",
      uid: o.uid ?? `uid-${name}`,
      resourceVersion: o.resourceVersion ?? "10",
      creationTimestamp: startTime,
      ...(o.deleting ? { deletionTimestamp: startTime } : {}),
    },
    status: {
      startTime,
      active: o.ended ? 0 : 1,
      ready: o.ready === false || o.ended ? 0 : 1,
      ...(o.ended ? { conditions: [{ type: o.ended, status: "True" }] } : {}),
    },
  };
}

/** `kubectl get jobs -o json` output holding these Jobs. */
export function jobList(...jobs: IJob[]): string {
  return JSON.stringify({ apiVersion: "batch/v1", kind: "JobList", metadata: { resourceVersion: "99" }, items: jobs });
}
