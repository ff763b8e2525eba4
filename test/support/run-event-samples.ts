// One sample event of every run event kind, for the tests of the formatter and the log sinks.
import type { RunEvent, RunEventKind } from "../../src/events/run-events.js";

/** Keyed by kind, so adding a kind to RunEvent fails to compile until it has a sample here. */
export const SAMPLE_EVENTS: { readonly [K in RunEventKind]: Extract<RunEvent, { kind: K }> } = {
  "run-start": {
    time: "2026-11-29T10:00:00.000Z",
    kind: "run-start",
    runId: "42",
    jobName: "knotless-run-42",
    namespace: "ci",
    image: "busybox:1.36",
    steps: ["build", "test"],
  },
  kubectl: { time: "2026-11-29T10:00:00.100Z", kind: "kubectl", args: ["create", "-f", "-", "-o", "name"] },
  "api-call": {
    time: "2026-11-29T10:00:00.150Z",
    kind: "api-call",
    method: "POST",
    path: "/apis/batch/v1/namespaces/ci/jobs?fieldValidation=Strict",
    status: 201,
    durationMs: 12,
  },
  "phase-start": { time: "2026-11-29T10:00:00.200Z", kind: "phase-start", phase: "create" },
  "phase-end": {
    time: "2026-11-29T10:00:00.300Z",
    kind: "phase-end",
    phase: "create",
    ok: true,
    durationMs: 120,
    detail: "job.batch/knotless-run-42 in ci",
  },
  "pod-progress": {
    time: "2026-11-29T10:00:01.000Z",
    kind: "pod-progress",
    elapsedMs: 700,
    phase: "Pending",
    reason: "ContainerCreating",
    message: "creating",
    event: "Pulling image busybox:1.36",
  },
  "pod-ready": {
    time: "2026-11-29T10:00:02.000Z",
    kind: "pod-ready",
    pod: "knotless-run-42-abcde",
    node: "node-1",
    waitedMs: 1700,
  },
  "step-start": { time: "2026-11-29T10:00:03.000Z", kind: "step-start", index: 0, name: "build", command: "make all" },
  "step-output": { time: "2026-11-29T10:00:03.500Z", kind: "step-output", index: 0, stream: "stdout", text: "built\n" },
  "step-end": {
    time: "2026-11-29T10:00:04.500Z",
    kind: "step-end",
    index: 0,
    name: "build",
    status: "success",
    exitCode: 0,
    durationMs: 1500,
    timedOut: false,
  },
  notice: {
    time: "2026-11-29T10:00:05.000Z",
    kind: "notice",
    level: "warning",
    message: "refused output ../x: outside the workspace",
  },
  "service-log": {
    time: "2026-11-29T10:00:05.500Z",
    kind: "service-log",
    service: "postgres",
    when: "end",
    text: "LOG:  database system is ready to accept connections",
  },
  "cache-restore": {
    time: "2026-11-29T10:00:02.500Z",
    kind: "cache-restore",
    key: "deps-3f2a",
    status: "fallback",
    restoredKey: "deps-19c0",
    bytes: 1_250_000,
    durationMs: 900,
  },
  "cache-save": {
    time: "2026-11-29T10:00:05.200Z",
    kind: "cache-save",
    key: "deps-3f2a",
    status: "saved",
    bytes: 1_300_000,
    durationMs: 1100,
  },
  artifact: {
    time: "2026-11-29T10:00:05.500Z",
    kind: "artifact",
    name: "dist",
    status: "collected",
    files: 3,
    bytes: 4096,
    durationMs: 300,
    required: false,
  },
  "run-end": { time: "2026-11-29T10:00:06.000Z", kind: "run-end", status: "success", exitCode: 0, durationMs: 6000 },
};

/** Every sample, in the order a run would emit them. */
export function listSampleEvents(): RunEvent[] {
  return Object.values(SAMPLE_EVENTS);
}
