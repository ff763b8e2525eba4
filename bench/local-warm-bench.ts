// Local-cluster benchmark: runs with idle gaps on a cluster scaling from zero, without and with --keep-warm: time to first output against node-seconds.
import { mkdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { startLocalCluster, type LocalCluster, type NodeSpan } from "../local-cluster/index.js";
import { prepareSmallCheckout, writeStepsFile } from "./local-workflows.js";
import { readRunLog } from "./run-log.js";
import { buildRunnerArgs, runRunnerTimed, type RunnerInvocation } from "./runner-cli.js";

export interface WarmBenchSettings {
  readonly kubectlPath: string;
  /** The local cluster's scale-from-zero mode: seconds to join, seconds of hold after the last demand. */
  readonly joinSeconds: number;
  readonly holdSeconds: number;
  /** Runs per scenario. */
  readonly runs: number;
  /** Seconds from one run's end to the next run's start: longer than the hold, so without warm capacity each run is cold. */
  readonly gapSeconds: number;
  /** The --keep-warm of the warm scenario. */
  readonly keepWarm: string;
}

export interface WarmBenchRun {
  readonly runId: string;
  /** Runner spawned → its first step output (log.ndjson). */
  readonly firstOutputMs: number;
  readonly podWaitMs: number | null;
  readonly capacity: string | null;
}

export interface WarmScenario {
  readonly label: string;
  readonly extraArgs: readonly string[];
  readonly runs: readonly WarmBenchRun[];
  /** Every node's life, epoch ms, from the first run's start until the cluster had no node again. */
  readonly nodes: readonly NodeSpan[];
  /** Node-seconds billed: each node from its scale-up (the rent) to its removal. */
  readonly nodeSeconds: number;
  /** First run's spawn → the last node's removal. */
  readonly spanMs: number;
}

export interface WarmBenchResult {
  readonly settings: WarmBenchSettings;
  readonly scenarios: readonly WarmScenario[];
  readonly runnerCommand: string;
}

export const FIRST_OUTPUT_STEP = "echo hi";

/** Node-seconds of these spans, a node still up counted until `until`. */
export function sumNodeSeconds(spans: readonly NodeSpan[], until: number): number {
  return spans.reduce((sum, span) => sum + ((span.removedAt ?? until) - span.requestedAt) / 1000, 0);
}

async function waitForNoNode(cluster: LocalCluster, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (
    cluster.objects("nodes").length > 0 ||
    cluster.objects("jobs.batch").length > 0 ||
    cluster.nodeHistory().some((n) => n.removedAt === undefined)
  ) {
    if (Date.now() > deadline) throw new Error(`the local cluster still had nodes or Jobs after ${timeoutMs} ms`);
    await sleep(250);
  }
}

async function runScenario(
  label: string,
  extraArgs: readonly string[],
  settings: WarmBenchSettings,
  workDir: string,
  env: Record<string, string>,
  log: (line: string) => void,
): Promise<WarmScenario> {
  const cluster = await startLocalCluster({
    pruneOrphans: false,
    scaleFromZero: { joinSeconds: settings.joinSeconds, holdSeconds: settings.holdSeconds },
  });
  try {
    await mkdir(workDir, { recursive: true });
    const checkoutDir = await prepareSmallCheckout(workDir);
    const stepsFile = await writeStepsFile(workDir, "warm-steps.tsv", [["hi", FIRST_OUTPUT_STEP]]);
    const runs: WarmBenchRun[] = [];
    const began = Date.now();
    for (let index = 0; index < settings.runs; index++) {
      if (index > 0) await sleep(settings.gapSeconds * 1000);
      const runId = `lwarm-${label}-${index}`;
      const invocation: RunnerInvocation = {
        checkoutDir,
        stepsFile,
        outDir: join(workDir, runId),
        kubectlPath: settings.kubectlPath,
        kubeconfigPath: cluster.kubeconfigPath,
        runId,
        extraArgs,
      };
      const spawnedAt = Date.now();
      await runRunnerTimed(invocation, env);
      const runLog = await readRunLog(invocation.outDir);
      const result = JSON.parse(await readFile(join(invocation.outDir, "result.json"), "utf8")) as {
        status: string;
        capacity?: string | null;
        podWaitMs?: number | null;
      };
      const firstOutput = runLog.firstOutputAt.get(0);
      if (result.status !== "success" || firstOutput === undefined)
        throw new Error(`run ${runId}: status ${result.status}, no first output`);
      runs.push({
        runId,
        firstOutputMs: firstOutput - spawnedAt,
        podWaitMs: result.podWaitMs ?? null,
        capacity: result.capacity ?? null,
      });
      log(
        `  ${label} run ${index + 1}/${settings.runs}: ${result.capacity} capacity, first output ${firstOutput - spawnedAt} ms after spawn, pod wait ${result.podWaitMs} ms`,
      );
      await rm(invocation.outDir, { recursive: true, force: true });
    }
    await waitForNoNode(cluster, 15 * 60_000);
    const nodes = cluster.nodeHistory().filter((n) => n.requestedAt >= began);
    const end = Math.max(...nodes.map((n) => n.removedAt ?? Date.now()));
    return { label, extraArgs, runs, nodes, nodeSeconds: sumNodeSeconds(nodes, end), spanMs: end - began };
  } finally {
    await cluster.stop();
  }
}

/** The cold scenario, then the warm one, each on a fresh cluster that starts with no node. */
export async function runLocalWarmBench(
  settings: WarmBenchSettings,
  workDir: string,
  env: Record<string, string>,
  log: (line: string) => void,
): Promise<WarmBenchResult> {
  const scenarios: WarmScenario[] = [];
  for (const [label, extraArgs] of [
    ["cold", []],
    ["warm", ["--keep-warm", settings.keepWarm]],
  ] as const) {
    log(
      `local warm capacity, ${label}: ${settings.runs} runs, ${settings.gapSeconds} s between one's end and the next's start, JOIN ${settings.joinSeconds} s, HOLD ${settings.holdSeconds} s${extraArgs.length ? `, ${extraArgs.join(" ")}` : ""}`,
    );
    scenarios.push(await runScenario(label, extraArgs, settings, join(workDir, label), env, log));
  }
  const example: RunnerInvocation = {
    checkoutDir: "CHECKOUT",
    stepsFile: "STEPS",
    outDir: "OUT",
    kubectlPath: settings.kubectlPath,
    kubeconfigPath: "KUBECONFIG",
    runId: "lwarm-warm-N",
    extraArgs: ["--keep-warm", settings.keepWarm],
  };
  return { settings, scenarios, runnerCommand: `node ${buildRunnerArgs(example).join(" ")}` };
}
