// Splits a run's wall time using the fake kubectl's call records: time inside each call versus time between calls.
import type { RecordedCall } from "../test/fixtures/fake-kubectl/harness.js";

export type CallKind = "create" | "get" | "upload" | "step" | "download" | "delete" | "other";

export interface CallTimeline {
  /** The calls on the run's path, in order (the background ones below are not among them). */
  readonly calls: number;
  /**
   * Calls that run beside the run's path and hold nothing up: the runner's cancel watch (`get job --watch`, one
   * process for the whole run) and heartbeat refreshes (`patch job`). A plain script makes neither.
   */
  readonly backgroundCalls: number;
  readonly kinds: readonly CallKind[];
  /** Per kind: summed time the fake spent in the call (after its own start-up, latency included). */
  readonly insideMs: Readonly<Record<CallKind, number>>;
  /** From the caller's spawn to the first call's record (caller start-up plus one fake start-up). */
  readonly leadMs: number;
  /** Summed time between one call's end and the next one's record (caller work plus the next fake's start-up). */
  readonly betweenMs: number;
  /** Each of those gaps, in call order: gapsMs[i] lies between call i and call i + 1. */
  readonly gapsMs: readonly number[];
  /** From the last call's end to the caller's exit. */
  readonly tailMs: number;
}

/** What a recorded call was, from its argv. */
export function classifyCall(argv: readonly string[]): CallKind {
  const verbIndex = argv.findIndex((a) => a === "create" || a === "get" || a === "exec" || a === "delete");
  const verb = argv[verbIndex];
  if (verb === "create" || verb === "delete") return verb;
  if (verb === "get") return "get";
  if (verb !== "exec") return "other";
  const command = argv.slice(argv.indexOf("--") + 1).join(" ");
  if (argv.includes("-i")) return "upload";
  if (command.includes("pack-outputs") || command.startsWith("tar -cf")) return "download";
  return "step";
}

/** The cancel watch and the heartbeat: calls that overlap the run's path instead of lying on it. */
export function isBackgroundCall(argv: readonly string[]): boolean {
  return (argv.includes("get") && argv.includes("--watch")) || argv.includes("patch");
}

/** Builds the timeline of the calls one caller made between spawnedAt and exitedAt (epoch ms). */
export function buildCallTimeline(
  allCalls: readonly RecordedCall[],
  spawnedAt: number,
  exitedAt: number,
): CallTimeline {
  const calls = allCalls.filter((call) => !isBackgroundCall(call.argv));
  const insideMs: Record<CallKind, number> = {
    create: 0,
    get: 0,
    upload: 0,
    step: 0,
    download: 0,
    delete: 0,
    other: 0,
  };
  const kinds: CallKind[] = [];
  const gapsMs: number[] = [];
  let previousEnd: number | undefined;
  for (const call of calls) {
    const start = Date.parse(call.time);
    const kind = classifyCall(call.argv);
    kinds.push(kind);
    insideMs[kind] += call.durationMs ?? 0;
    if (previousEnd !== undefined) gapsMs.push(start - previousEnd);
    previousEnd = start + (call.durationMs ?? 0);
  }
  const betweenMs = gapsMs.reduce((sum, gap) => sum + gap, 0);
  const first = calls[0];
  return {
    calls: calls.length,
    backgroundCalls: allCalls.length - calls.length,
    kinds,
    insideMs,
    leadMs: first ? Date.parse(first.time) - spawnedAt : 0,
    betweenMs,
    gapsMs,
    tailMs: previousEnd === undefined ? 0 : exitedAt - previousEnd,
  };
}
