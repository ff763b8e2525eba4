// Reads a runner's <out>/log.ndjson into the timestamps the local-cluster benchmarks need.
import { readFile } from "node:fs/promises";
import { join } from "node:path";

export interface Span {
  readonly startedAt: number;
  readonly endedAt: number;
  readonly durationMs: number;
}

export interface RunLog {
  /** The run-start event (the runner process is up and validated its input). */
  readonly runStartAt: number;
  /** System phases by name: create, pod, upload, download, teardown. */
  readonly phases: Readonly<Record<string, Span>>;
  /** User steps by index, with the duration the runner reports. */
  readonly steps: readonly Span[];
  /** The pod-ready event: a `get pods` showed the pod Running. */
  readonly podReadyAt: number;
  /** Per step index, the first step-output line's time. */
  readonly firstOutputAt: ReadonlyMap<number, number>;
  /** Time of each kubectl call the runner spawned, with its verb and (for exec) the in-pod command. */
  readonly kubectlCalls: ReadonlyArray<{ readonly at: number; readonly what: string }>;
}

interface LogLine {
  time?: string;
  kind?: string;
  step?: number;
  status?: string;
  stepKind?: string;
  name?: string;
  durationMs?: number;
  stream?: string;
  event?: string;
  content?: string;
}

/** "get pods", "exec helper.sh run 0", ...: a short name for a kubectl call from its logged command line. */
function describeCall(content: string): string {
  const verb = /\s(create|get|exec|delete)\s/.exec(content)?.[1] ?? "other";
  if (verb === "get") return `get ${/\sget\s(\S+)/.exec(content)?.[1] ?? ""}`;
  if (verb !== "exec") return verb;
  if (content.includes("helper.sh run")) return "exec step";
  if (content.includes("pack-outputs")) return "exec download";
  if (content.includes(" exec -i ")) return "exec upload";
  return "exec other";
}

export async function readRunLog(outDir: string): Promise<RunLog> {
  const text = await readFile(join(outDir, "log.ndjson"), "utf8");
  const phases: Record<string, Span> = {};
  const steps: Span[] = [];
  const starts = new Map<string, number>();
  const firstOutputAt = new Map<number, number>();
  const kubectlCalls: Array<{ at: number; what: string }> = [];
  let runStartAt: number | undefined;
  let podReadyAt: number | undefined;
  for (const raw of text.split("\n")) {
    if (!raw.trim()) continue;
    const line = JSON.parse(raw) as LogLine;
    if (!line.time) continue;
    const at = Date.parse(line.time);
    if (line.kind === "control" && line.name) {
      const key = line.stepKind === "user" ? `step:${line.step}` : line.name;
      if (line.status === "start") starts.set(key, at);
      else if (line.status === "end" && typeof line.durationMs === "number") {
        const span = { startedAt: starts.get(key) ?? at - line.durationMs, endedAt: at, durationMs: line.durationMs };
        if (line.stepKind === "user" && typeof line.step === "number") steps[line.step] = span;
        else phases[line.name] = span;
      }
      continue;
    }
    if (line.kind !== "data") continue;
    if (line.event === "run-start") runStartAt ??= at;
    else if (line.event === "pod-ready") podReadyAt ??= at;
    else if (line.event === "kubectl") kubectlCalls.push({ at, what: describeCall(line.content ?? "") });
    else if (
      typeof line.step === "number" &&
      line.step >= 0 &&
      (line.stream === "stdout" || line.stream === "stderr") &&
      !firstOutputAt.has(line.step)
    ) {
      firstOutputAt.set(line.step, at);
    }
  }
  if (runStartAt === undefined || podReadyAt === undefined)
    throw new Error(`${outDir}/log.ndjson has no run-start or pod-ready event`);
  return { runStartAt, phases, steps, podReadyAt, firstOutputAt, kubectlCalls };
}

/** Counts calls by their short name: "create 1, get pods 4, exec upload 1, ...". */
export function countCalls(calls: ReadonlyArray<{ readonly what: string }>): string {
  const counts = new Map<string, number>();
  for (const call of calls) counts.set(call.what, (counts.get(call.what) ?? 0) + 1);
  return [...counts].map(([what, n]) => `${what} ${n}`).join(", ");
}
