// Local-cluster benchmark 1: the runner's whole run of the small workflow against a plain script making the same calls.
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { BenchCluster } from "./local-cluster-env.js";
import { buildMarkedWorkflowScript } from "./local-plain-scripts.js";
import { assertMarkedSucceeded, findMark, runMarkedScript, type MarkedRun } from "./marked-run.js";
import { OVERHEAD_STEPS } from "./overhead-bench.js";
import { buildRunnerArgs, readDryRunManifest, runRunnerTimed, type RunnerInvocation } from "./runner-cli.js";
import { countCalls, readRunLog } from "./run-log.js";
import { summarizeValues, type Summary } from "./stats.js";
import { prepareSmallCheckout, writeStepsFile } from "./local-workflows.js";

/** The segments both sides go through, in order; each is "from the previous boundary to this one". */
export const OVERHEAD_SEGMENTS = ["created", "running", "uploaded", "steps", "downloaded", "deleted", "exit"] as const;
export type OverheadSegment = (typeof OVERHEAD_SEGMENTS)[number];

export interface LocalOverheadSide {
  readonly wallMs: number;
  /** ms spent in each segment (boundary − previous boundary; the first from the process spawn). */
  readonly segments: Readonly<Record<OverheadSegment, number>>;
  /** From the pod's Running in the API server's store to the `get pods` that showed it. */
  readonly noticeLagMs: number;
  /** How many kubectl calls, and which. */
  readonly calls: number;
  readonly callSummary: string;
}

export interface LocalOverheadRep {
  readonly runner: LocalOverheadSide & { readonly startupMs: number };
  readonly plain: LocalOverheadSide;
}

export interface LocalOverheadResult {
  readonly reps: readonly LocalOverheadRep[];
  readonly runner: Summary;
  readonly plain: Summary;
  readonly ratio: Summary;
  readonly medianRatio: number;
  readonly runnerCommand: string;
  readonly plainScript: string;
}

interface Env {
  readonly bench: BenchCluster;
  readonly workDir: string;
  readonly env: Record<string, string>;
  readonly invocationFor: (runId: string) => RunnerInvocation;
  readonly plainScript: string;
  readonly checkoutDir: string;
}

async function runRunnerOnce(ctx: Env, runId: string): Promise<LocalOverheadRep["runner"]> {
  const invocation = ctx.invocationFor(runId);
  await ctx.bench.quiesce();
  const spawnedAt = Date.now();
  const timed = await runRunnerTimed(invocation, ctx.env);
  if (!timed.stdout.includes("hello from the benchmark"))
    throw new Error(`runner ${runId}: no echo step output on stdout:\n${timed.stdout.slice(-2000)}`);
  const log = await readRunLog(invocation.outDir);
  const result = JSON.parse(await readFile(join(invocation.outDir, "result.json"), "utf8")) as { job: { pod: string } };
  const trueRunning = ctx.bench.watch.runningAt(result.job.pod);
  const phase = (name: string): number => {
    const span = log.phases[name];
    if (!span) throw new Error(`runner ${runId}: no ${name} phase in log.ndjson`);
    return span.endedAt;
  };
  const lastStep = log.steps.at(-1)?.endedAt ?? 0;
  const exitedAt = spawnedAt + timed.wallMs;
  const bounds = [
    spawnedAt,
    phase("create"),
    log.podReadyAt,
    phase("upload"),
    lastStep,
    phase("download"),
    phase("teardown"),
    exitedAt,
  ];
  await rm(invocation.outDir, { recursive: true, force: true });
  return {
    wallMs: timed.wallMs,
    startupMs: log.runStartAt - spawnedAt,
    segments: toSegments(bounds),
    noticeLagMs: trueRunning === undefined ? NaN : log.podReadyAt - trueRunning,
    calls: log.kubectlCalls.length,
    callSummary: countCalls(log.kubectlCalls),
  };
}

function toSegments(bounds: readonly number[]): Record<OverheadSegment, number> {
  const segments = {} as Record<OverheadSegment, number>;
  OVERHEAD_SEGMENTS.forEach((name, i) => (segments[name] = (bounds[i + 1] as number) - (bounds[i] as number)));
  return segments;
}

async function runPlainOnce(ctx: Env, runId: string): Promise<LocalOverheadSide> {
  const manifestPath = join(ctx.workDir, `${runId}.json`);
  const job = await readDryRunManifest(ctx.invocationFor(runId), ctx.env);
  await writeFile(manifestPath, job.json);
  const dest = join(ctx.workDir, runId, "outputs");
  const env = {
    ...ctx.env,
    JOB: job.jobName,
    SELECTOR: job.selector,
    MANIFEST: manifestPath,
    CHECKOUT: ctx.checkoutDir,
    DEST: dest,
  };
  await ctx.bench.quiesce();
  const run: MarkedRun = await runMarkedScript(ctx.plainScript, env);
  assertMarkedSucceeded(`plain workflow ${runId}`, run);
  if (!run.stdout.includes("hello from the benchmark"))
    throw new Error(`plain ${runId}: no echo step output:\n${run.stdout}`);
  const running = findMark(run, "running");
  const steps = run.marks.filter((m) => m.label === "step");
  const bounds = [
    run.spawnedAt,
    findMark(run, "created").at,
    running.at,
    findMark(run, "uploaded").at,
    steps.at(-1)?.at ?? NaN,
    findMark(run, "downloaded").at,
    findMark(run, "deleted").at,
    run.exitedAt,
  ];
  const polls = run.marks.filter((m) => m.label === "poll").length;
  const trueRunning = ctx.bench.watch.runningAt(running.value);
  await rm(join(ctx.workDir, runId), { recursive: true, force: true });
  await rm(manifestPath, { force: true });
  return {
    wallMs: run.wallMs,
    segments: toSegments(bounds),
    noticeLagMs: trueRunning === undefined ? NaN : running.at - trueRunning,
    calls: 1 + polls + 1 + steps.length + 1 + 1,
    callSummary: `create 1, get pods ${polls}, exec upload 1, exec step ${steps.length}, exec download 1, delete 1`,
  };
}

/** Alternates runner and plain runs (runner first on even reps), after one unmeasured warm-up round of each. */
export async function runLocalOverheadBench(
  bench: BenchCluster,
  workDir: string,
  baseEnv: Record<string, string>,
  reps: number,
  log: (line: string) => void,
): Promise<LocalOverheadResult> {
  const checkoutDir = await prepareSmallCheckout(workDir);
  const stepsFile = await writeStepsFile(workDir, "overhead-steps.tsv", OVERHEAD_STEPS);
  const plainScript = buildMarkedWorkflowScript(OVERHEAD_STEPS.map(([, script]) => script));
  const invocationFor = (runId: string): RunnerInvocation => ({
    checkoutDir,
    stepsFile,
    outDir: join(workDir, runId),
    kubectlPath: bench.kubectlPath,
    kubeconfigPath: bench.cluster.kubeconfigPath,
    runId,
  });
  const env = { ...baseEnv, K: bench.kubectlPath, KC: bench.cluster.kubeconfigPath, NS: "default" };
  const ctx: Env = { bench, workDir, env, invocationFor, plainScript, checkoutDir };
  await runRunnerOnce(ctx, "lovh-runner-warmup");
  await runPlainOnce(ctx, "lovh-plain-warmup");
  const results: LocalOverheadRep[] = [];
  for (let rep = 0; rep < reps; rep++) {
    let runner: LocalOverheadRep["runner"] | undefined;
    let plain: LocalOverheadSide | undefined;
    for (const which of rep % 2 === 0 ? ["runner", "plain"] : ["plain", "runner"]) {
      if (which === "runner") runner = await runRunnerOnce(ctx, `lovh-runner-${rep}`);
      else plain = await runPlainOnce(ctx, `lovh-plain-${rep}`);
    }
    if (!runner || !plain) throw new Error("unreachable");
    results.push({ runner, plain });
    log(
      `  local overhead rep ${rep + 1}/${reps}: runner ${runner.wallMs.toFixed(0)} ms (${runner.calls} calls), plain ${plain.wallMs.toFixed(0)} ms (${plain.calls} calls), ratio ${(runner.wallMs / plain.wallMs).toFixed(3)}`,
    );
  }
  const runner = summarizeValues(results.map((r) => r.runner.wallMs));
  const plain = summarizeValues(results.map((r) => r.plain.wallMs));
  return {
    reps: results,
    runner,
    plain,
    ratio: summarizeValues(results.map((r) => r.runner.wallMs / r.plain.wallMs)),
    medianRatio: runner.median / plain.median,
    runnerCommand: `node ${buildRunnerArgs(invocationFor("lovh-runner-N")).join(" ")}`,
    plainScript,
  };
}
