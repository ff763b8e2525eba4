// Pure conversion of objects to meta.k8s.io/v1 Tables, so a human `kubectl get` prints useful columns.

import { formatAge } from "./time.js";
import type { KubeObject } from "./types.js";

interface Column {
  name: string;
  type: string;
  format?: string;
  description: string;
  priority?: number;
  cell: (o: KubeObject) => string | number;
}

const nameColumn: Column = {
  name: "Name",
  type: "string",
  format: "name",
  description: "Name of the object",
  cell: (o) => o.metadata.name,
};
const ageColumn: Column = {
  name: "Age",
  type: "string",
  description: "Time since creation",
  cell: (o) => formatAge(o.metadata.creationTimestamp),
};

/** The STATUS column of `kubectl get pods`: a waiting/terminated reason wins over the phase, like the real printer. */
export function describePodStatus(pod: KubeObject): string {
  if (pod.metadata.deletionTimestamp) return "Terminating";
  if (pod.status?.reason) return pod.status.reason;
  for (const cs of pod.status?.containerStatuses ?? []) {
    if (cs.state?.waiting?.reason) return cs.state.waiting.reason;
    if (cs.state?.terminated?.reason && pod.status?.phase !== "Succeeded") return cs.state.terminated.reason;
  }
  if (pod.status?.phase === "Succeeded") return "Completed";
  return pod.status?.phase ?? "Pending";
}

function describeJobStatus(job: KubeObject): string {
  const conditions: { type: string; status: string }[] = job.status?.conditions ?? [];
  if (conditions.some((c) => c.type === "Complete" && c.status === "True")) return "Complete";
  if (conditions.some((c) => c.type === "Failed" && c.status === "True")) return "Failed";
  if (job.spec?.suspend) return "Suspended";
  return "Running";
}

function describeJobDuration(job: KubeObject): string {
  const start = job.status?.startTime;
  if (!start) return "";
  const end = job.status?.completionTime ? new Date(job.status.completionTime) : new Date();
  return formatAge(start, end);
}

const COLUMNS: Record<string, Column[]> = {
  pods: [
    nameColumn,
    {
      name: "Ready",
      type: "string",
      description: "Ready containers",
      cell: (o) => {
        const statuses: { ready?: boolean }[] = o.status?.containerStatuses ?? [];
        return `${statuses.filter((s) => s.ready).length}/${(o.spec?.containers ?? []).length}`;
      },
    },
    { name: "Status", type: "string", description: "Pod status", cell: describePodStatus },
    {
      name: "Restarts",
      type: "string",
      description: "Container restarts",
      cell: (o) =>
        String(
          (o.status?.containerStatuses ?? []).reduce(
            (n: number, s: { restartCount?: number }) => n + (s.restartCount ?? 0),
            0,
          ),
        ),
    },
    ageColumn,
    { name: "IP", type: "string", priority: 1, description: "Pod IP", cell: (o) => o.status?.podIP ?? "<none>" },
    { name: "Node", type: "string", priority: 1, description: "Node", cell: (o) => o.spec?.nodeName ?? "<none>" },
  ],
  "jobs.batch": [
    nameColumn,
    { name: "Status", type: "string", description: "Job status", cell: describeJobStatus },
    {
      name: "Completions",
      type: "string",
      description: "Succeeded/desired",
      cell: (o) => `${o.status?.succeeded ?? 0}/${o.spec?.completions ?? 1}`,
    },
    { name: "Duration", type: "string", description: "Run time", cell: describeJobDuration },
    ageColumn,
  ],
  events: [
    { name: "Last Seen", type: "string", description: "Last time", cell: (o) => formatAge(o.lastTimestamp) },
    { name: "Type", type: "string", description: "Type", cell: (o) => o.type ?? "" },
    { name: "Reason", type: "string", description: "Reason", cell: (o) => o.reason ?? "" },
    {
      name: "Object",
      type: "string",
      description: "Object",
      cell: (o) => `${String(o.involvedObject?.kind ?? "").toLowerCase()}/${o.involvedObject?.name ?? ""}`,
    },
    { name: "Message", type: "string", description: "Message", cell: (o) => o.message ?? "" },
  ],
  persistentvolumeclaims: [
    nameColumn,
    {
      name: "Status",
      type: "string",
      description: "Claim phase",
      cell: (o) => (o.metadata.deletionTimestamp ? "Terminating" : (o.status?.phase ?? "Pending")),
    },
    { name: "Volume", type: "string", description: "Bound volume", cell: (o) => o.spec?.volumeName ?? "" },
    { name: "Capacity", type: "string", description: "Capacity", cell: (o) => o.status?.capacity?.storage ?? "" },
    {
      name: "Access Modes",
      type: "string",
      description: "Access modes",
      cell: (o) =>
        (o.status?.accessModes ?? [])
          .map(
            (m: string) =>
              ({ ReadWriteOnce: "RWO", ReadOnlyMany: "ROX", ReadWriteMany: "RWX", ReadWriteOncePod: "RWOP" })[m] ?? m,
          )
          .join(","),
    },
    {
      name: "StorageClass",
      type: "string",
      description: "Storage class",
      cell: (o) => o.spec?.storageClassName ?? "<unset>",
    },
    ageColumn,
  ],
  nodes: [
    nameColumn,
    {
      name: "Status",
      type: "string",
      description: "Node status",
      cell: (o) =>
        (o.status?.conditions ?? []).some((c: any) => c.type === "Ready" && c.status === "True") ? "Ready" : "NotReady",
    },
    ageColumn,
  ],
};

export function buildTable(
  storeKey: string,
  objects: readonly KubeObject[],
  includeObject: string | null,
  resourceVersion: string,
): object {
  const columns = COLUMNS[storeKey] ?? [nameColumn, ageColumn];
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: { resourceVersion },
    columnDefinitions: columns.map((c) => ({
      name: c.name,
      type: c.type,
      format: c.format ?? "",
      description: c.description,
      priority: c.priority ?? 0,
    })),
    rows: objects.map((o) => ({
      cells: columns.map((c) => c.cell(o)),
      object:
        includeObject === "Object"
          ? o
          : includeObject === "None"
            ? undefined
            : { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata: o.metadata },
    })),
  };
}

/** True when the Accept header asks for a Table (kubectl's human `get`). */
export function wantsTable(accept: string | undefined): boolean {
  return !!accept && /as=Table/.test(accept);
}
