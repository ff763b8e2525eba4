// `npm run bench`: the runner-overhead and big-transfer benchmarks through the fake kubectl, then the local-cluster ones, as markdown.
import { mkdir, mkdtemp, rm, statfs, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFakeCluster } from "../test/fixtures/fake-kubectl/harness.js";
import { renderLibraryReport, runLibraryConcurrencyBench } from "./library-concurrency-bench.js";
import { runLocalBenchmarks } from "./local-benchmarks.js";
import { checkLocalClusterUsable } from "./local-cluster-env.js";
import { runLocalWarmBench } from "./local-warm-bench.js";
import { renderWarmReport } from "./local-warm-report.js";
import { listLogsCases, runLogsBench, type LogsMeasurement } from "./logs-bench.js";
import { describeMachine } from "./machine.js";
import { runMaskBench } from "./mask-bench.js";
import { renderMaskReport } from "./mask-report.js";
import { parseBenchOptions, type BenchOptions } from "./options.js";
import { runOverheadBench, type OverheadResult } from "./overhead-bench.js";
import { renderReport } from "./report.js";
import { runTransferBench, type TransferResult } from "./transfer-bench.js";

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

/**
 * The scratch dir: /dev/shm (tmpfs) when it has room for about four copies of the largest checkout, else the temp
 * dir. On this project's VMs ext4 creates small files slowly (tar -x of 6,250 files: 9 s on /tmp, 0.7 s on tmpfs),
 * which would hide what the runner itself costs behind the disk.
 */
async function pickScratchDir(options: BenchOptions): Promise<string> {
  if (options.scratchDir) return options.scratchDir;
  const transfers =
    options.only.has("transfer") || options.only.has("local-transfer") ? options.transferSizes.map((s) => s.bytes) : [];
  // The logs benchmark leaves two runs' logs of up to ~1 GB each (300 MB printed, before run.log lost its per-line prefix).
  const needed = 4 * Math.max(0, ...transfers) + 512 * 1024 * 1024 + (options.only.has("logs") ? 2 * 1024 ** 3 : 0);
  const shm = await statfs("/dev/shm").catch(() => undefined);
  return shm && shm.bavail * shm.bsize >= needed ? "/dev/shm" : tmpdir();
}

async function runBenchmarks(options: BenchOptions, argv: readonly string[]): Promise<string> {
  const scratch = await pickScratchDir(options);
  await mkdir(scratch, { recursive: true });
  const runsFake = options.only.has("overhead") || options.only.has("transfer") || options.only.has("logs");
  const runsLocal = [...options.only].some((name) => name.startsWith("local-") && name !== "local-warm");
  const fake = runsFake ? await runFakeBenchmarks(options, argv, scratch) : "";
  const local = runsLocal ? await runLocalBenchmarks(options, argv, scratch, log) : "";
  const mask = options.only.has("mask") ? await runMaskBenchmark(options, argv, scratch) : "";
  const warm = options.only.has("local-warm") ? await runWarmBenchmark(options, argv, scratch) : "";
  const library = options.only.has("library") ? await runLibraryBenchmark(options, argv, scratch) : "";
  return [fake, local, mask, warm, library].filter((part) => part !== "").join("\n");
}

async function runWarmBenchmark(options: BenchOptions, argv: readonly string[], scratch: string): Promise<string> {
  const skipReason = await checkLocalClusterUsable(options.local.kubectlPath);
  if (skipReason) {
    log(`local-warm SKIPPED: ${skipReason}`);
    return `## Warm capacity on the local cluster\n\nSKIPPED: ${skipReason}\n`;
  }
  const started = Date.now();
  const machine = describeMachine();
  const workDir = await mkdtemp(join(scratch, "knotless-warm-bench-"));
  // The runner's staging dir and every kubectl follow TMPDIR.
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? "/root",
    TMPDIR: scratch,
  };
  try {
    const settings = {
      kubectlPath: options.local.kubectlPath,
      joinSeconds: 30,
      holdSeconds: 20,
      runs: 5,
      gapSeconds: 40,
      keepWarm: "2m",
    };
    return renderWarmReport(machine, argv, await runLocalWarmBench(settings, workDir, env, log), Date.now() - started);
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

async function runLibraryBenchmark(options: BenchOptions, argv: readonly string[], scratch: string): Promise<string> {
  const skipReason = await checkLocalClusterUsable(options.local.kubectlPath);
  if (skipReason) {
    log(`library SKIPPED: ${skipReason}`);
    return `## Concurrent runs through the library\n\nSKIPPED: ${skipReason}\n`;
  }
  return renderLibraryReport(await runLibraryConcurrencyBench(options.local.libraryRuns, scratch, log), argv);
}

async function runMaskBenchmark(options: BenchOptions, argv: readonly string[], scratch: string): Promise<string> {
  const started = Date.now();
  const machine = describeMachine();
  log(`secret masking${options.quick ? " (quick sizes)" : ""}; relay logs in ${scratch}`);
  const result = await runMaskBench(options.quick, scratch, log);
  return renderMaskReport(machine, argv, result, Date.now() - started);
}

async function runFakeBenchmarks(options: BenchOptions, argv: readonly string[], scratch: string): Promise<string> {
  const started = Date.now();
  const machine = describeMachine();
  // The fake cluster (its pod volumes), the runner's staging dir and every kubectl it spawns follow TMPDIR.
  process.env.TMPDIR = scratch;
  log(`scratch dir (pod volumes, --out dirs, baseline dirs): ${scratch}; checkout cache: ${options.cacheDir}`);
  const workDir = await mkdtemp(join(scratch, "knotless-bench-"));
  const cluster = await createFakeCluster();
  // Ctrl-C still cleans up: the harness kills pod sandboxes on exit; the temp dir goes here.
  const onSignal = (): void => {
    void cluster
      .cleanup()
      .finally(() => rm(workDir, { recursive: true, force: true }).finally(() => process.exit(130)));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    let overhead: OverheadResult | undefined;
    const transfers: TransferResult[] = [];
    let logs: LogsMeasurement[] | undefined;
    if (options.only.has("overhead")) {
      log(`runner overhead: ${options.overheadReps} repetitions, latencyMs ${options.latencyMs}`);
      overhead = await runOverheadBench(
        cluster,
        join(workDir, "overhead"),
        options.latencyMs,
        options.overheadReps,
        log,
      );
    }
    if (options.only.has("transfer")) {
      for (const size of options.transferSizes) {
        log(`big transfer: ${size.label}, ${size.reps} repetition(s), latencyMs ${options.latencyMs}`);
        const dir = join(workDir, `transfer-${size.files}`);
        await mkdir(dir, { recursive: true });
        transfers.push(await runTransferBench(cluster, dir, options.cacheDir, options.latencyMs, size, log));
      }
    }
    if (options.only.has("logs")) {
      const dir = join(workDir, "logs");
      await mkdir(dir, { recursive: true });
      logs = await runLogsBench(cluster, dir, listLogsCases(options.quick), log);
    }
    return renderReport({ ...machine, scratch }, options, argv, overhead, transfers, Date.now() - started, logs);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await cluster.cleanup();
    await rm(workDir, { recursive: true, force: true });
    if (options.cleanCache) await rm(options.cacheDir, { recursive: true, force: true });
  }
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  let options: BenchOptions;
  try {
    options = parseBenchOptions(argv);
  } catch (error) {
    log(error instanceof Error ? error.message : String(error));
    return 2;
  }
  const report = await runBenchmarks(options, argv);
  process.stdout.write(report);
  if (options.reportPath) await writeFile(options.reportPath, report);
  return 0;
}

process.exitCode = await main();
