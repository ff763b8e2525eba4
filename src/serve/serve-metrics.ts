// The service's Prometheus metrics (prom-client, loaded when serve starts): runs by status, queue, durations, pod waits, bytes moved, cluster errors, stream followers, process memory.
import type { RunEvent, RunEventSink } from "../events/run-events.js";
import type { RunResult } from "../run/run-result.js";
import type { FollowerCounts } from "./follower-budget.js";
import type { RunObserver } from "./run-service.js";
import type { ServeRunStatus } from "./run-store.js";

/** What the gauges read when /metrics is asked for. */
export interface MetricsSource {
  countByStatus(): ReadonlyMap<ServeRunStatus, number>;
  queueLength(): number;
  runningCount(): number;
  /** /logs and /events followers now, dropped so far, and the bytes buffered for them. */
  followers?(): FollowerCounts;
}

export interface ServeMetrics {
  readonly observer: RunObserver;
  readonly contentType: string;
  render(): Promise<string>;
}

const STATUSES: readonly ServeRunStatus[] = [
  "pending",
  "running",
  "success",
  "failed",
  "timeout",
  "cancelled",
  "skipped",
];
/** Error reasons that are not the cluster's: bad input, a missing artifact, a bug. */
const NOT_CLUSTER_REASONS = new Set([
  "input",
  "internal",
  "artifact-missing",
  "cancelled",
  "checkout-failed",
  "disk-full",
  "runner-lost",
  "ownership-unknown",
]);

export async function createServeMetrics(source: MetricsSource): Promise<ServeMetrics> {
  // prom-client loads when serve starts: ~100 ms of CPU every other command would pay.
  const { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } = await import("prom-client");
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: "knotless_runner_runs",
    help: "Runs the service's database holds, by status (pruned after --keep-runs)",
    labelNames: ["status"],
    registers: [registry],
    collect() {
      const counts = source.countByStatus();
      for (const status of STATUSES) this.set({ status }, counts.get(status) ?? 0);
    },
  });
  new Gauge({
    name: "knotless_runner_queue_length",
    help: "Runs waiting for a slot (pending)",
    registers: [registry],
    collect() {
      this.set(source.queueLength());
    },
  });
  new Gauge({
    name: "knotless_runner_running_runs",
    help: "Runs running now (at most --max-runs)",
    registers: [registry],
    collect() {
      this.set(source.runningCount());
    },
  });
  const followerLabels = (key: string): { stream: string; transport: string } => {
    const [stream, transport] = key.split("/");
    return { stream: stream!, transport: transport! };
  };
  new Gauge({
    name: "knotless_runner_followers",
    help: "Clients following /logs and /events now, by stream (logs, events) and transport (ndjson, websocket)",
    labelNames: ["stream", "transport"],
    registers: [registry],
    collect() {
      for (const [key, n] of source.followers?.().followers ?? []) this.set(followerLabels(key), n);
    },
  });
  new Gauge({
    name: "knotless_runner_follower_buffered_bytes",
    help: "Bytes buffered for all followers, sent but not yet taken by their connections (at most --all-followers-buffer)",
    registers: [registry],
    collect() {
      this.set(source.followers?.().bufferedBytes ?? 0);
    },
  });
  new Counter({
    name: "knotless_runner_followers_dropped_total",
    help: "Followers dropped for taking nothing for --follower-stall-timeout, by stream and transport",
    labelNames: ["stream", "transport"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [key, n] of source.followers?.().dropped ?? []) this.inc(followerLabels(key), n);
    },
  });
  const runDuration = new Histogram({
    name: "knotless_runner_run_duration_seconds",
    help: "Duration of finished runs, by status",
    labelNames: ["status"],
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200],
    registers: [registry],
  });
  const phaseDuration = new Histogram({
    name: "knotless_runner_phase_duration_seconds",
    help: "Duration of the runner's phases (scan, create, pod, upload, secrets, download, teardown)",
    labelNames: ["phase", "ok"],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  const podWait = new Histogram({
    name: "knotless_runner_pod_wait_seconds",
    help: "Time from the Job's creation until its pod ran",
    buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900],
    registers: [registry],
  });
  const bytes = new Counter({
    name: "knotless_runner_bytes_moved_total",
    help: "Bytes moved between the host and the pods: checkouts uploaded (the archive), outputs downloaded, caches restored and saved",
    labelNames: ["direction"],
    registers: [registry],
  });
  const clusterErrors = new Counter({
    name: "knotless_runner_cluster_errors_total",
    help: "Runs that failed on the infrastructure, by reason",
    labelNames: ["reason"],
    registers: [registry],
  });
  const onEvent = (event: RunEvent): void => {
    if (event.kind === "phase-end") {
      phaseDuration.observe({ phase: event.phase, ok: String(event.ok) }, event.durationMs / 1000);
      if (event.phase === "upload" && event.bytes !== undefined && event.bytes > 0)
        bytes.inc({ direction: "upload" }, event.bytes);
    } else if (event.kind === "pod-ready") podWait.observe(event.waitedMs / 1000);
    else if (event.kind === "cache-restore" && event.bytes > 0) bytes.inc({ direction: "cache-restore" }, event.bytes);
    else if (event.kind === "cache-save" && event.bytes > 0) bytes.inc({ direction: "cache-save" }, event.bytes);
  };
  return {
    observer: {
      runSink: (): RunEventSink => onEvent,
      runEnded(result: RunResult) {
        runDuration.observe({ status: result.status }, result.durationMs / 1000);
        let downloaded = 0;
        for (let i = 0; i < result.outputs.length; i++) downloaded += result.outputs.at(i)?.size ?? 0;
        if (downloaded > 0) bytes.inc({ direction: "download" }, downloaded);
        if (result.errorReason !== null && !NOT_CLUSTER_REASONS.has(result.errorReason))
          clusterErrors.inc({ reason: result.errorReason });
      },
    },
    contentType: registry.contentType,
    render: () => registry.metrics(),
  };
}
