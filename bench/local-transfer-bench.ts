// Local-cluster benchmark: the big checkout uploaded and /outputs of the same size downloaded by the runner through
// --transport api and --transport kubectl, against plain tar through podman exec (the floor) and through kubectl exec.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ensureCheckout, type GeneratedCheckout } from "./checkout-tree.js";
import type { BenchCluster } from "./local-cluster-env.js";
import { buildDeleteScript } from "./local-plain-scripts.js";
import type { TransferSize } from "./options.js";
import { PRELUDE } from "./plain-scripts.js";
import { sampleTree } from "./process-tree.js";
import { buildRunnerArgs, readPhaseSpans, type RunnerInvocation } from "./runner-cli.js";
import { summarizeValues, type Summary } from "./stats.js";
import { assertSucceeded, runTimed } from "./timed-process.js";
import { COPY_STEP, countTree } from "./transfer-bench.js";

export const TRANSPORTS = ["api", "kubectl"] as const;
export type Transport = (typeof TRANSPORTS)[number];
const RSS_EVERY_MS = 25;

/** The plain baselines, each timed alone in a pod the runner left running; `$C` is its podman container. */
export const PLAIN_SCRIPTS = {
  podmanUpload: 'tar -cf - -C "$CHECKOUT" . | podman exec -i "$C" tar -xf - -C /work/.plain',
  podmanDownload: 'podman exec "$C" tar -cf - -C /outputs . | tar -xf - -C "$DEST"',
  kubectlUpload: `${PRELUDE}\ntar -cf - -C "$CHECKOUT" . | k exec -i "$POD" -c run -- tar -xf - -C /work/.plain`,
  kubectlDownload: `${PRELUDE}\nk exec "$POD" -c run -- tar -cf - -C /outputs . | tar -xf - -C "$DEST"`,
} as const;
export type PlainName = keyof typeof PLAIN_SCRIPTS;

export interface RunnerTransferRep {
  readonly transport: Transport;
  /** The scan phase (the checkout listed before create) plus the upload phase, from log.ndjson. */
  readonly uploadMs: number;
  readonly scanMs: number;
  readonly downloadMs: number;
  readonly wallMs: number;
  /** Highest sum of VmRSS of the runner and every descendant (kubectl, tar), sampled every 25 ms. */
  readonly peakTreeKiB: number;
  /** Highest VmRSS of the runner process alone. */
  readonly peakRunnerKiB: number;
  /** CPU time (user + system) of the runner and its reaped children, from its last /proc stat sample. */
  readonly cpuMs: number;
  /** Names of the child processes seen, with counts. */
  readonly children: Readonly<Record<string, number>>;
}

export interface LocalTransferResult {
  readonly size: TransferSize;
  readonly checkout: GeneratedCheckout;
  readonly runs: readonly RunnerTransferRep[];
  readonly plain: Readonly<Record<PlainName, readonly number[]>>;
  readonly runnerCommand: string;
}

interface RunnerRunOutcome {
  readonly rep: RunnerTransferRep;
  readonly job: { readonly name: string; readonly pod: string };
}

const CLOCK_TICKS_PER_S = 100;

/** utime + stime + cutime + cstime of a live process in ms (its reaped children included), or undefined once gone. */
function readCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // After the command name: state is field 3, so utime..cstime (fields 14-17) sit at 11-14 here.
    const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
    return (ticks * 1000) / CLOCK_TICKS_PER_S;
  } catch {
    return undefined;
  }
}

async function runRunnerSampled(
  args: readonly string[],
  env: Readonly<Record<string, string>>,
): Promise<{
  wallMs: number;
  peakTreeKiB: number;
  peakRunnerKiB: number;
  cpuMs: number;
  children: Record<string, number>;
}> {
  const started = performance.now();
  // To profile the runners alone (this process serves the local cluster): BENCH_RUNNER_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR".
  const nodeArgs = process.env.BENCH_RUNNER_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeArgs, ...args], { env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  let peakTree = 0;
  let peakOwn = 0;
  let cpuMs = 0;
  const seen = new Map<number, string>();
  const timer = setInterval(() => {
    if (child.pid === undefined) return;
    const sample = sampleTree(child.pid);
    peakTree = Math.max(peakTree, sample.total);
    peakOwn = Math.max(peakOwn, sample.own);
    for (const [pid, name] of sample.pids) seen.set(pid, name);
    cpuMs = readCpuMs(child.pid) ?? cpuMs;
  }, RSS_EVERY_MS);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  }).finally(() => clearInterval(timer));
  if (code !== 0) throw new Error(`the runner exited ${code}:\n${stderr}`);
  const children: Record<string, number> = {};
  for (const name of seen.values()) children[name] = (children[name] ?? 0) + 1;
  return { wallMs: performance.now() - started, peakTreeKiB: peakTree, peakRunnerKiB: peakOwn, cpuMs, children };
}

interface Context {
  readonly bench: BenchCluster;
  readonly workDir: string;
  readonly env: Readonly<Record<string, string>>;
  readonly checkout: GeneratedCheckout;
  readonly stepsFile: string;
}

function invocationFor(ctx: Context, transport: Transport, runId: string): RunnerInvocation {
  return {
    checkoutDir: ctx.checkout.dir,
    stepsFile: ctx.stepsFile,
    outDir: join(ctx.workDir, runId),
    kubectlPath: ctx.bench.kubectlPath,
    kubeconfigPath: ctx.bench.cluster.kubeconfigPath,
    runId,
    transport,
    // The pod's emptyDirs may be tmpfs (--pod-volumes memory), charged to its memory: the checkout, its copy in /outputs and the plain tar's.
    extraArgs: [
      "--keep",
      "--max-output-bytes",
      String(ctx.checkout.bytes * 2),
      "--timeout",
      "30m",
      "--memory",
      `${Math.ceil((ctx.checkout.bytes * 4) / 2 ** 20) + 512}Mi`,
    ],
  };
}

/** One runner run that uploads the checkout, copies it to /outputs and downloads it; its Job is kept for the baselines. */
async function runRunnerOnce(ctx: Context, transport: Transport, rep: number): Promise<RunnerRunOutcome> {
  const invocation = invocationFor(ctx, transport, `ltx-${transport}-${rep}`);
  try {
    const sampled = await runRunnerSampled(buildRunnerArgs(invocation), ctx.env);
    const spans = await readPhaseSpans(invocation.outDir);
    const result = JSON.parse(await readFile(join(invocation.outDir, "result.json"), "utf8")) as {
      status: string;
      job: { name: string; pod: string };
      outputs: Array<{ size: number }>;
    };
    const bytes = result.outputs.reduce((sum, o) => sum + o.size, 0);
    if (result.status !== "success" || result.outputs.length !== ctx.checkout.files || bytes !== ctx.checkout.bytes) {
      throw new Error(
        `runner ${invocation.runId}: status ${result.status}, ${result.outputs.length} outputs / ${bytes} bytes, expected ${ctx.checkout.files} / ${ctx.checkout.bytes}`,
      );
    }
    const { scan, upload, download } = spans;
    if (!scan || !upload || !download)
      throw new Error(`runner ${invocation.runId}: no scan/upload/download phase in log.ndjson`);
    return {
      rep: {
        transport,
        uploadMs: scan.durationMs + upload.durationMs,
        scanMs: scan.durationMs,
        downloadMs: download.durationMs,
        ...sampled,
      },
      job: result.job,
    };
  } finally {
    await rm(invocation.outDir, { recursive: true, force: true });
  }
}

async function findRunContainer(bench: BenchCluster, pod: string): Promise<string> {
  const name = (await bench.cluster.podmanContainers()).find((c) => c.endsWith(`-default-${pod}-run`));
  if (!name) throw new Error(`no podman container for pod ${pod}`);
  return name;
}

/** Each plain baseline once in the kept pod, checked for the right file count and bytes where it lands on the host. */
async function runPlainOnce(
  ctx: Context,
  job: { name: string; pod: string },
  rep: number,
): Promise<Record<PlainName, number>> {
  const dest = join(ctx.workDir, `plain-${rep}`);
  const env = {
    ...ctx.env,
    K: ctx.bench.kubectlPath,
    KC: ctx.bench.cluster.kubeconfigPath,
    NS: "default",
    POD: job.pod,
    C: await findRunContainer(ctx.bench, job.pod),
    CHECKOUT: ctx.checkout.dir,
    DEST: dest,
  };
  const untimed = async (script: string): Promise<void> =>
    assertSucceeded(script, await runTimed("sh", ["-c", script], { env }));
  const times: Partial<Record<PlainName, number>> = {};
  // Rotate the order so no baseline always runs first (a cold page cache, the runner's writeback).
  const names = Object.keys(PLAIN_SCRIPTS) as PlainName[];
  const order = names.map((_, i) => names[(i + rep) % names.length] as PlainName);
  for (const name of order) {
    if (name.endsWith("Upload")) await untimed('podman exec "$C" sh -c "rm -rf /work/.plain && mkdir /work/.plain"');
    else await untimed('rm -rf "$DEST" && mkdir -p "$DEST"');
    const run = await runTimed("sh", ["-c", PLAIN_SCRIPTS[name]], { env });
    assertSucceeded(`plain ${name}`, run);
    times[name] = run.wallMs;
    if (name.endsWith("Download")) {
      const tree = await countTree(dest);
      if (tree.files !== ctx.checkout.files || tree.bytes !== ctx.checkout.bytes)
        throw new Error(`plain ${name}: ${tree.files} files / ${tree.bytes} bytes`);
    }
  }
  await untimed('podman exec "$C" rm -rf /work/.plain');
  await rm(dest, { recursive: true, force: true });
  return times as Record<PlainName, number>;
}

async function deleteJob(ctx: Context, job: { name: string }): Promise<void> {
  const env = {
    ...ctx.env,
    K: ctx.bench.kubectlPath,
    KC: ctx.bench.cluster.kubeconfigPath,
    NS: "default",
    JOB: job.name,
  };
  assertSucceeded(`delete ${job.name}`, await runTimed("sh", ["-c", buildDeleteScript()], { env }));
}

/**
 * Per repetition: a runner run through each transport (the first one alternating), each on a quiet cluster; in the
 * first run's kept pod, the four plain baselines. The checkout is generated under workDir (removed by the caller).
 */
export async function runLocalTransferBench(
  bench: BenchCluster,
  workDir: string,
  env: Readonly<Record<string, string>>,
  size: TransferSize,
  log: (line: string) => void,
): Promise<LocalTransferResult> {
  log(`  ${size.label}: generating the checkout ...`);
  const checkout = await ensureCheckout(join(workDir, "checkouts"), { bytes: size.bytes, files: size.files });
  log(
    `  ${size.label}: ${checkout.files} files, ${checkout.dirs} dirs, ${checkout.bytes} bytes in ${(checkout.generateMs / 1000).toFixed(1)} s`,
  );
  assertSucceeded(
    "warming the checkout",
    await runTimed("sh", ["-c", 'tar -cf - -C "$1" . | cat > /dev/null', "sh", checkout.dir]),
  );
  const stepsFile = join(workDir, "copy-steps.tsv");
  await writeFile(stepsFile, `copy\t${COPY_STEP}\n`);
  const ctx: Context = { bench, workDir, env, checkout, stepsFile };
  const runs: RunnerTransferRep[] = [];
  const plain: Record<PlainName, number[]> = {
    podmanUpload: [],
    podmanDownload: [],
    kubectlUpload: [],
    kubectlDownload: [],
  };
  for (let rep = 0; rep < size.reps; rep++) {
    const order: Transport[] = rep % 2 === 0 ? ["api", "kubectl"] : ["kubectl", "api"];
    for (const [i, transport] of order.entries()) {
      await bench.quiesce();
      const outcome = await runRunnerOnce(ctx, transport, rep);
      try {
        runs.push(outcome.rep);
        const r = outcome.rep;
        log(
          `  rep ${rep + 1}/${size.reps} ${transport}: upload ${r.uploadMs} ms (scan ${r.scanMs}), download ${r.downloadMs} ms, wall ${(r.wallMs / 1000).toFixed(1)} s, CPU ${(r.cpuMs / 1000).toFixed(1)} s, peak RSS ${(r.peakTreeKiB / 1024).toFixed(1)} MiB with children (runner ${(r.peakRunnerKiB / 1024).toFixed(1)}), children ${JSON.stringify(r.children)}`,
        );
        if (i === 0) {
          const times = await runPlainOnce(ctx, outcome.job, rep);
          for (const name of Object.keys(times) as PlainName[]) plain[name].push(times[name]);
          log(
            `  rep ${rep + 1}/${size.reps} plain: ${(Object.keys(times) as PlainName[]).map((name) => `${name} ${times[name].toFixed(0)} ms`).join(", ")}`,
          );
        }
      } finally {
        await deleteJob(ctx, outcome.job);
      }
    }
  }
  await rm(checkout.dir, { recursive: true, force: true });
  return {
    size,
    checkout,
    runs,
    plain,
    runnerCommand: `node ${buildRunnerArgs(invocationFor(ctx, "api", "ltx-N")).join(" ")}`,
  };
}

export interface TransferVerdict {
  readonly upload: Record<Transport, Summary>;
  readonly download: Record<Transport, Summary>;
  readonly peakTreeMiB: Record<Transport, Summary>;
  readonly cpuS: Record<Transport, Summary>;
  readonly plain: Record<PlainName, Summary>;
}

/** Medians and spreads of every measure. */
export function summarizeLocalTransfer(result: LocalTransferResult): TransferVerdict {
  const of = (transport: Transport, pick: (r: RunnerTransferRep) => number) =>
    summarizeValues(result.runs.filter((r) => r.transport === transport).map(pick));
  const byTransport = (pick: (r: RunnerTransferRep) => number) => ({
    api: of("api", pick),
    kubectl: of("kubectl", pick),
  });
  return {
    upload: byTransport((r) => r.uploadMs),
    download: byTransport((r) => r.downloadMs),
    peakTreeMiB: byTransport((r) => r.peakTreeKiB / 1024),
    cpuS: byTransport((r) => r.cpuMs / 1000),
    plain: {
      podmanUpload: summarizeValues(result.plain.podmanUpload),
      podmanDownload: summarizeValues(result.plain.podmanDownload),
      kubectlUpload: summarizeValues(result.plain.kubectlUpload),
      kubectlDownload: summarizeValues(result.plain.kubectlDownload),
    },
  };
}
