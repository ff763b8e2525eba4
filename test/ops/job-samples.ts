// Job JSON as the API server returns it, for the ops tests: runs (live, finished, abandoned, kept) and warm placeholders.
import type { IJob } from "kubernetes-models/batch/v1/Job";

export const NOW = Date.parse("2026-06-01T12:00:00.000Z");

/** An ISO time `seconds` before NOW. */
export function ago(seconds: number): string {
  return new Date(NOW - seconds * 1000).toISOString();
}

export interface SampleJob {
  readonly name?: string;
  readonly runId?: string;
  readonly createdSecondsAgo?: number;
  readonly heartbeatSecondsAgo?: number;
  readonly owner?: string;
  /** The owning serve instance (`knotless.dev/instance`) and the one it was adopted from. */
  readonly instance?: string;
  readonly adoptedFrom?: string;
  readonly warm?: { readonly deadlineSeconds?: number };
  readonly complete?: boolean;
  readonly failedReason?: string;
  readonly kept?: boolean;
  readonly deleting?: boolean;
  readonly cancelRequested?: string;
  readonly ours?: boolean;
}

export function sampleJob(options: SampleJob = {}): IJob {
  const name = options.name ?? `knotless-run-${options.runId ?? "r1"}`;
  const annotations: Record<string, string> = {};
  if (!options.warm) annotations["knotless.dev/run-id"] = options.runId ?? "r1";
  if (options.heartbeatSecondsAgo !== undefined)
    annotations["knotless.dev/heartbeat"] = ago(options.heartbeatSecondsAgo);
  if (options.owner) annotations["knotless.dev/owner"] = options.owner;
  if (options.instance) annotations["knotless.dev/instance"] = options.instance;
  if (options.adoptedFrom) annotations["knotless.dev/adopted-from"] = options.adoptedFrom;
  if (options.kept) annotations["knotless.dev/kept"] = ago(1);
  if (options.cancelRequested) annotations["knotless.dev/cancel-requested"] = options.cancelRequested;
  const labels: Record<string, string> =
    options.ours === false ? { app: "other" } : { "app.kubernetes.io/managed-by": "knotless-runner-k8s" };
  if (options.warm) labels["knotless.dev/role"] = "warm";
  const conditions = [
    ...(options.complete ? [{ type: "Complete", status: "True", lastTransitionTime: ago(30) }] : []),
    ...(options.failedReason
      ? [{ type: "Failed", status: "True", reason: options.failedReason, lastTransitionTime: ago(30) }]
      : []),
  ];
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name,
      namespace: "ci",
      labels,
      annotations,
      creationTimestamp: ago(options.createdSecondsAgo ?? 600),
      ...(options.deleting ? { deletionTimestamp: ago(1) } : {}),
    },
    spec: {
      template: {},
      ...(options.warm?.deadlineSeconds !== undefined ? { activeDeadlineSeconds: options.warm.deadlineSeconds } : {}),
    },
    status: { ...(options.complete ? { completionTime: ago(30) } : {}), ...(conditions.length ? { conditions } : {}) },
  } as IJob;
}
