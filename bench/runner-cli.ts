// Runs the knotless-runner-k8s CLI for the benchmark: its dry-run manifest, and timed real runs.
import { readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import { assertSucceeded, runTimed, type TimedRun } from "./timed-process.js";

/** dist/bench -> the repo root. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const RUNNER_BIN = join(REPO_ROOT, "bin", "knotless-runner-k8s.js");

export interface RunnerInvocation {
  readonly checkoutDir: string;
  readonly stepsFile: string;
  readonly outDir: string;
  readonly kubectlPath: string;
  readonly kubeconfigPath: string;
  readonly runId: string;
  /** The cluster transport; kubectl when absent (the figures measured before the API transport). */
  readonly transport?: "api" | "kubectl";
  readonly extraArgs?: readonly string[];
}

/** The runner's argv (after `node`), exactly as the report prints it. */
export function buildRunnerArgs(run: RunnerInvocation): string[] {
  return [
    RUNNER_BIN,
    "run",
    "--checkout",
    run.checkoutDir,
    "--steps",
    run.stepsFile,
    "--out",
    run.outDir,
    // The figures in bench/RESULTS.md that use this were measured through kubectl: pinned, now that api is the default.
    "--transport",
    run.transport ?? "kubectl",
    "--kubectl",
    run.kubectlPath,
    "--kubeconfig",
    run.kubeconfigPath,
    "--run-id",
    run.runId,
    ...(run.extraArgs ?? []),
  ];
}

export interface PlainJob {
  /** The manifest as JSON text for `create -f -`. */
  readonly json: string;
  readonly jobName: string;
  /** The label selector of the run's pod, as the runner builds it. */
  readonly selector: string;
}

/** The Job manifest the runner would create for this invocation (from --dry-run), with its name and pod selector. */
export async function readDryRunManifest(
  run: RunnerInvocation,
  env: Readonly<Record<string, string>>,
): Promise<PlainJob> {
  const dry = await runTimed(process.execPath, [...buildRunnerArgs(run), "--dry-run"], { env });
  assertSucceeded("the runner's --dry-run", dry);
  const text = dry.stdout.slice(0, dry.stdout.indexOf("# kubectl calls"));
  const manifest = parseAllDocuments(text)
    .map((doc) => doc.toJS() as unknown)
    .find((doc) => doc !== null && typeof doc === "object");
  if (!manifest) throw new Error(`no manifest in the dry-run output:\n${dry.stdout.slice(0, 2000)}`);
  const json = JSON.stringify(manifest, (key, value: unknown) =>
    key === "knotless.dev/create-token" ? "bench-plain-script" : value,
  );
  const metadata = (manifest as { metadata?: { name?: string; labels?: Record<string, string> } }).metadata;
  const labels = metadata?.labels ?? {};
  if (!metadata?.name || !labels["knotless.dev/run-id"])
    throw new Error("the dry-run manifest has no name or run-id label");
  const selector = Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
  return { json, jobName: metadata.name, selector };
}

/** Times a real run; the runner process's peak RSS is watched when rssEveryMs is given. */
export async function runRunnerTimed(
  run: RunnerInvocation,
  env: Readonly<Record<string, string>>,
  rssEveryMs?: number,
): Promise<TimedRun> {
  const timed = await runTimed(process.execPath, buildRunnerArgs(run), {
    env,
    ...(rssEveryMs === undefined ? {} : { watchRssEveryMs: rssEveryMs }),
  });
  assertSucceeded(`the runner (run ${run.runId})`, timed);
  return timed;
}

/** One runner phase (create, pod, upload, download, teardown) or user step, from <out>/log.ndjson. */
export interface PhaseSpan {
  readonly name: string;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly durationMs: number;
}

/** The runner's system phases and user steps with their start and end times, from <out>/log.ndjson. */
export async function readPhaseSpans(outDir: string): Promise<Record<string, PhaseSpan>> {
  const text = await readFile(join(outDir, "log.ndjson"), "utf8");
  const starts = new Map<string, number>();
  const spans: Record<string, PhaseSpan> = {};
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const event = JSON.parse(line) as {
      time?: string;
      kind?: string;
      status?: string;
      stepKind?: string;
      name?: string;
      durationMs?: number;
    };
    if (event.kind !== "control" || !event.name || !event.time) continue;
    const key = event.stepKind === "user" ? `step:${event.name}` : event.name;
    if (event.status === "start") starts.set(key, Date.parse(event.time));
    else if (event.status === "end" && typeof event.durationMs === "number") {
      const endedAt = Date.parse(event.time);
      spans[key] = {
        name: key,
        startedAt: starts.get(key) ?? endedAt - event.durationMs,
        endedAt,
        durationMs: event.durationMs,
      };
    }
  }
  return spans;
}
