// Runs the selected local-cluster benchmarks (real kubectl, podman pods) and renders them; skips when podman is unusable.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { loadavg } from "node:os";
import { join } from "node:path";
import {
  checkLocalClusterUsable,
  readToolVersions,
  startBenchCluster,
  stopBenchCluster,
  type BenchCluster,
  type Leftovers,
} from "./local-cluster-env.js";
import { runLocalCacheBench } from "./local-cache-bench.js";
import { renderCacheReport } from "./local-cache-report.js";
import { runLocalFirstOutputBench, type FirstOutputResult } from "./local-first-output-bench.js";
import { runLocalOutputsBench, type OutputsResult } from "./local-outputs-bench.js";
import { runLocalOverheadBench, type LocalOverheadResult } from "./local-overhead-bench.js";
import { renderLocalReport, renderLocalSkipped } from "./local-report.js";
import { runLocalTransferBench, type LocalTransferResult } from "./local-transfer-bench.js";
import { renderLocalTransferReport } from "./local-transfer-report.js";
import { runLocalStepBench, type StepResult } from "./local-step-bench.js";
import { describeMachine } from "./machine.js";
import type { BenchOptions } from "./options.js";

export async function runLocalBenchmarks(
  options: BenchOptions,
  argv: readonly string[],
  scratch: string,
  log: (line: string) => void,
): Promise<string> {
  const selected = options.only;
  const local = options.local;
  const skipReason = await checkLocalClusterUsable(local.kubectlPath);
  if (skipReason) {
    log(`local-cluster benchmarks SKIPPED: ${skipReason}`);
    return renderLocalSkipped(skipReason);
  }
  const started = Date.now();
  const machine = describeMachine();
  const tools = await readToolVersions(local.kubectlPath);
  log(`local-cluster benchmarks with ${tools.kubectl}, ${tools.podman}`);
  const workDir = await mkdtemp(join(scratch, "knotless-local-bench-"));
  const bench: BenchCluster = await startBenchCluster(local.kubectlPath, local.podVolumes, local.clusterTls);
  // The runner's staging dir and every kubectl follow TMPDIR; the plain scripts get the same environment.
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/root",
    TMPDIR: scratch,
  };
  let stopped: Promise<Leftovers> | undefined;
  const stop = (): Promise<Leftovers> => (stopped ??= stopBenchCluster(bench));
  const onSignal = (): void => {
    void stop().finally(() => rm(workDir, { recursive: true, force: true }).finally(() => process.exit(130)));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  let overhead: LocalOverheadResult | undefined;
  let firstOutput: FirstOutputResult | undefined;
  let step: StepResult | undefined;
  let outputs: OutputsResult | undefined;
  let cacheReport = "";
  let transferReport = "";
  let leftovers: Leftovers;
  const elapsed: Array<[string, number]> = [];
  const timed = async <T>(name: string, run: () => Promise<T>): Promise<T> => {
    const at = Date.now();
    const value = await run();
    elapsed.push([name, Date.now() - at]);
    log(`  ${name}: ${((Date.now() - at) / 1000).toFixed(0)} s`);
    return value;
  };
  try {
    const dir = async (name: string) => {
      const path = join(workDir, name);
      await mkdir(path, { recursive: true });
      return path;
    };
    if (selected.has("local-overhead")) {
      log(`local overhead: ${local.overheadReps} repetitions`);
      overhead = await timed("local-overhead", async () =>
        runLocalOverheadBench(bench, await dir("overhead"), env, local.overheadReps, log),
      );
    }
    if (selected.has("local-first-output")) {
      log(`local first output: ${local.firstOutputReps} repetitions`);
      firstOutput = await timed("local-first-output", async () =>
        runLocalFirstOutputBench(bench, await dir("first-output"), env, local.firstOutputReps, log),
      );
    }
    if (selected.has("local-step")) {
      log(`local empty step: ${local.stepRuns} runner run(s)`);
      step = await timed("local-step", async () =>
        runLocalStepBench(bench, await dir("step"), env, local.stepRuns, log),
      );
    }
    if (selected.has("local-outputs")) {
      log(`local outputs: ${local.outputsReps} repetition(s)`);
      outputs = await timed("local-outputs", async () =>
        runLocalOutputsBench(bench, await dir("outputs"), env, local.outputsReps, log),
      );
    }
    if (selected.has("local-cache")) {
      log(`local cache: ${local.cacheSizes.map((s) => s.label).join(", ")}`);
      const loadAtStart = loadavg();
      const result = await timed("local-cache", async () =>
        runLocalCacheBench(bench, await dir("cache"), env, local.cacheSizes, log, local.hostCpus),
      );
      cacheReport = renderCacheReport(result, loadAtStart, loadavg());
    }
    if (selected.has("local-transfer")) {
      const loadAtStart = loadavg();
      const sizes = options.quick
        ? options.transferSizes.slice(0, 1)
        : options.transferSizes.filter((size) => size.role === "issue");
      const results: LocalTransferResult[] = [];
      for (const size of sizes) {
        log(`local transfer: ${size.label}, ${size.reps} repetition(s)`);
        results.push(
          await timed(`local-transfer ${size.label}`, async () =>
            runLocalTransferBench(bench, await dir(`transfer-${size.files}`), env, size, log),
          ),
        );
      }
      transferReport = renderLocalTransferReport(results, argv, loadAtStart);
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    leftovers = await stop();
    await rm(workDir, { recursive: true, force: true });
  }
  const left = [...leftovers.containers, ...leftovers.pods, ...leftovers.volumes];
  log(
    left.length === 0
      ? "local cluster stopped; nothing of it left in podman"
      : `local cluster stopped; LEFT IN PODMAN: ${left.join(", ")}`,
  );
  const report = renderLocalReport({
    machine,
    tools,
    argv,
    scratch,
    totalMs: Date.now() - started,
    elapsed,
    loadAtEnd: loadavg(),
    leftovers,
    ...(overhead ? { overhead } : {}),
    ...(firstOutput ? { firstOutput } : {}),
    ...(step ? { step } : {}),
    ...(outputs ? { outputs } : {}),
  });
  return [report, cacheReport, transferReport].filter((part) => part !== "").join("\n");
}
