// Benchmark 2: a big checkout streamed in by the runner and back out, against plain tar through the same fake kubectl.
import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { FakeCluster } from "../test/fixtures/fake-kubectl/harness.js";
import { ensureCheckout, type GeneratedCheckout } from "./checkout-tree.js";
import type { TransferSize } from "./options.js";
import { buildPlainTransferScripts } from "./plain-scripts.js";
import {
  buildRunnerArgs,
  readDryRunManifest,
  readPhaseSpans,
  runRunnerTimed,
  type PhaseSpan,
  type RunnerInvocation,
} from "./runner-cli.js";
import { computeMedian, summarizeValues, type Summary } from "./stats.js";
import { measureTransferParts, type TransferParts } from "./transfer-parts.js";
import { assertSucceeded, runTimed } from "./timed-process.js";

export const COPY_STEP = "cp -a /work/. /outputs/";
const RSS_POLL_MS = 20;
const MIB = 1024 * 1024;

export interface TransferRep {
  /** The runner's scan phase (the checkout listed and checked before create) plus its upload phase. */
  readonly runnerUploadMs: number;
  /** The scan phase alone. */
  readonly runnerScanMs: number;
  readonly runnerDownloadMs: number;
  readonly runnerWallMs: number;
  readonly runnerPeakRssKiB: number;
  readonly rssSamples: number;
  /** Highest VmRSS sample (KiB) during the upload, the copy step and the download. */
  readonly rssByPhaseKiB: { readonly upload: number; readonly step: number; readonly download: number };
  readonly plainUploadMs: number;
  readonly plainDownloadMs: number;
}

export interface TransferResult {
  readonly size: TransferSize;
  readonly checkout: GeneratedCheckout;
  readonly reps: readonly TransferRep[];
  readonly runnerUpload: Summary;
  readonly runnerDownload: Summary;
  readonly plainUpload: Summary;
  readonly plainDownload: Summary;
  readonly peakRssMiB: Summary;
  /** plain time / runner time of the medians (= runner throughput / plain throughput). */
  readonly uploadRatio: number;
  readonly downloadRatio: number;
  /** The same for the runner's upload phase without its scan: for reference, the verdict counts the scan. */
  readonly uploadPhaseRatio: number;
  /** Each repetition's plain time / runner time, summarized: less swayed by load that drifts between repetitions. */
  readonly pairedUploadRatio: Summary;
  readonly pairedDownloadRatio: Summary;
  /** The host-side parts alone, measured once after the repetitions. */
  readonly parts: TransferParts;
  readonly runnerCommand: string;
  readonly plainCommands: { readonly upload: string; readonly download: string };
}

/** Files and bytes of regular files under dir. */
export async function countTree(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  const { lstat } = await import("node:fs/promises");
  const walk = async (path: string): Promise<void> => {
    for (const entry of await readdir(path, { withFileTypes: true })) {
      const child = join(path, entry.name);
      if (entry.isDirectory()) await walk(child);
      else if (entry.isFile()) {
        files += 1;
        bytes += (await lstat(child)).size;
      }
    }
  };
  await walk(dir);
  return { files, bytes };
}

export function describeThroughput(bytes: number, ms: number): string {
  return `${(bytes / MIB / (ms / 1000)).toFixed(1)} MiB/s`;
}

interface Context {
  readonly cluster: FakeCluster;
  readonly workDir: string;
  readonly checkout: GeneratedCheckout;
  readonly stepsFile: string;
  readonly tag: string;
}

function invocationFor(ctx: Context, runId: string): RunnerInvocation {
  return {
    checkoutDir: ctx.checkout.dir,
    stepsFile: ctx.stepsFile,
    outDir: join(ctx.workDir, runId),
    kubectlPath: ctx.cluster.kubectlPath,
    kubeconfigPath: ctx.cluster.kubeconfigPath,
    runId,
    extraArgs: ["--max-output-bytes", String(ctx.checkout.bytes * 2), "--timeout", "30m"],
  };
}

function findPeakIn(timeline: ReadonlyArray<readonly [number, number]>, span: PhaseSpan | undefined): number {
  if (!span) return 0;
  return timeline
    .filter(([at]) => at >= span.startedAt && at <= span.endedAt)
    .reduce((max, [, kib]) => Math.max(max, kib), 0);
}

async function runRunnerOnce(
  ctx: Context,
  rep: number,
): Promise<
  Pick<
    TransferRep,
    | "runnerUploadMs"
    | "runnerScanMs"
    | "runnerDownloadMs"
    | "runnerWallMs"
    | "runnerPeakRssKiB"
    | "rssSamples"
    | "rssByPhaseKiB"
  >
> {
  const invocation = invocationFor(ctx, `xfer-${ctx.tag}-runner-${rep}`);
  try {
    const timed = await runRunnerTimed(invocation, ctx.cluster.env, RSS_POLL_MS);
    const phases = await readPhaseSpans(invocation.outDir);
    const result = JSON.parse(await readFile(join(invocation.outDir, "result.json"), "utf8")) as {
      status: string;
      outputs: unknown[];
    };
    if (result.status !== "success" || result.outputs.length !== ctx.checkout.files) {
      throw new Error(
        `runner run ${invocation.runId}: status ${result.status}, ${result.outputs.length} outputs, expected ${ctx.checkout.files}`,
      );
    }
    const { scan, upload, download } = phases;
    if (scan === undefined || upload === undefined || download === undefined)
      throw new Error(`runner run ${invocation.runId}: no scan/upload/download phase in log.ndjson`);
    const timeline = timed.rssTimeline ?? [];
    return {
      // The scan is upload work done before the Job is created (it lists what tar packs): it counts as upload time.
      runnerUploadMs: scan.durationMs + upload.durationMs,
      runnerScanMs: scan.durationMs,
      runnerDownloadMs: download.durationMs,
      runnerWallMs: timed.wallMs,
      runnerPeakRssKiB: timed.peakRssKiB ?? 0,
      rssSamples: timed.rssSamples ?? 0,
      rssByPhaseKiB: {
        upload: findPeakIn(timeline, upload),
        step: findPeakIn(timeline, phases["step:copy"]),
        download: findPeakIn(timeline, download),
      },
    };
  } finally {
    await rm(invocation.outDir, { recursive: true, force: true });
  }
}

async function runPlainOnce(
  ctx: Context,
  rep: number,
): Promise<Pick<TransferRep, "plainUploadMs" | "plainDownloadMs">> {
  const runId = `xfer-${ctx.tag}-plain-${rep}`;
  const dir = join(ctx.workDir, runId);
  const scripts = buildPlainTransferScripts(COPY_STEP);
  const manifestPath = join(ctx.workDir, `${runId}.json`);
  const job = await readDryRunManifest(invocationFor(ctx, runId), ctx.cluster.env);
  await writeFile(manifestPath, job.json);
  const env: Record<string, string> = {
    ...ctx.cluster.env,
    K: ctx.cluster.kubectlPath,
    KC: ctx.cluster.kubeconfigPath,
    NS: "default",
    JOB: job.jobName,
    SELECTOR: job.selector,
    MANIFEST: manifestPath,
    CHECKOUT: ctx.checkout.dir,
    DEST: join(dir, "outputs"),
  };
  const run = async (what: keyof typeof scripts) => {
    const timed = await runTimed("sh", ["-c", scripts[what]], { env });
    assertSucceeded(`plain ${what}`, timed);
    return timed;
  };
  try {
    env.POD = (await run("create")).stdout.trim();
    const upload = await run("upload");
    await run("step");
    const download = await run("download");
    const got = await countTree(join(dir, "outputs"));
    if (got.files !== ctx.checkout.files || got.bytes !== ctx.checkout.bytes) {
      throw new Error(
        `plain run ${runId}: downloaded ${got.files} files / ${got.bytes} bytes, expected ${ctx.checkout.files} / ${ctx.checkout.bytes}`,
      );
    }
    return { plainUploadMs: upload.wallMs, plainDownloadMs: download.wallMs };
  } finally {
    await runTimed("sh", ["-c", scripts.remove], { env });
    await rm(dir, { recursive: true, force: true });
    await rm(manifestPath, { force: true });
  }
}

export async function runTransferBench(
  cluster: FakeCluster,
  workDir: string,
  cacheDir: string,
  latencyMs: number,
  size: TransferSize,
  log: (line: string) => void,
): Promise<TransferResult> {
  await cluster.setFaults({ latencyMs });
  log(`  ${size.label}: preparing the checkout in ${cacheDir} ...`);
  const checkout = await ensureCheckout(cacheDir, { bytes: size.bytes, files: size.files });
  log(
    `  ${size.label}: ${checkout.cached ? "reused the cached checkout" : `generated in ${(checkout.generateMs / 1000).toFixed(1)} s`} (${checkout.files} files, ${checkout.dirs} dirs, ${checkout.bytes} bytes)`,
  );
  // Read the checkout once so neither side pays for a cold page cache (the runner goes first in rep 1; a
  // freshly generated 96,000-file checkout cost it 4x the plain upload before this warm-up).
  assertSucceeded(
    "warming the checkout",
    await runTimed("sh", ["-c", 'tar -cf - -C "$1" . | cat > /dev/null', "sh", checkout.dir]),
  );
  const stepsFile = join(workDir, "copy-steps.tsv");
  await writeFile(stepsFile, `copy\t${COPY_STEP}\n`);
  const tag = `${Math.round(size.bytes / MIB)}m`;
  const ctx: Context = { cluster, workDir, checkout, stepsFile, tag };
  const reps: TransferRep[] = [];
  for (let rep = 0; rep < size.reps; rep++) {
    const runnerFirst = rep % 2 === 0;
    const plain = runnerFirst ? undefined : await runPlainOnce(ctx, rep);
    const runner = await runRunnerOnce(ctx, rep);
    const plainResult = plain ?? (await runPlainOnce(ctx, rep));
    const row: TransferRep = { ...runner, ...plainResult };
    reps.push(row);
    log(
      `  ${size.label} rep ${rep + 1}/${size.reps}: upload runner ${row.runnerUploadMs} ms (scan ${row.runnerScanMs}) / plain ${row.plainUploadMs.toFixed(0)} ms, ` +
        `download runner ${row.runnerDownloadMs} ms / plain ${row.plainDownloadMs.toFixed(0)} ms, runner peak RSS ${(row.runnerPeakRssKiB / 1024).toFixed(1)} MiB (${row.rssSamples} samples; RSS max in upload ${(row.rssByPhaseKiB.upload / 1024).toFixed(1)}, step ${(row.rssByPhaseKiB.step / 1024).toFixed(1)}, download ${(row.rssByPhaseKiB.download / 1024).toFixed(1)} MiB)`,
    );
  }
  const parts = await measureTransferParts(checkout.dir, workDir, checkout.bytes);
  log(
    `  ${size.label} host-side parts: pack ${parts.packMs.toFixed(0)} ms vs tar -c ${parts.tarPackMs.toFixed(0)} ms; extract ${parts.extractMs.toFixed(0)} ms vs tar -x ${parts.tarExtractMs.toFixed(0)} ms`,
  );
  const runnerUpload = summarizeValues(reps.map((r) => r.runnerUploadMs));
  const runnerDownload = summarizeValues(reps.map((r) => r.runnerDownloadMs));
  const plainUpload = summarizeValues(reps.map((r) => r.plainUploadMs));
  const plainDownload = summarizeValues(reps.map((r) => r.plainDownloadMs));
  const scripts = buildPlainTransferScripts(COPY_STEP);
  const lastLine = (script: string) => script.trim().split("\n").slice(2).join("; ");
  return {
    size,
    checkout,
    reps,
    runnerUpload,
    runnerDownload,
    plainUpload,
    plainDownload,
    peakRssMiB: summarizeValues(reps.map((r) => r.runnerPeakRssKiB / 1024)),
    uploadRatio: plainUpload.median / runnerUpload.median,
    downloadRatio: plainDownload.median / runnerDownload.median,
    uploadPhaseRatio: plainUpload.median / computeMedian(reps.map((r) => r.runnerUploadMs - r.runnerScanMs)),
    pairedUploadRatio: summarizeValues(reps.map((r) => r.plainUploadMs / r.runnerUploadMs)),
    pairedDownloadRatio: summarizeValues(reps.map((r) => r.plainDownloadMs / r.runnerDownloadMs)),
    parts,
    runnerCommand: `node ${buildRunnerArgs(invocationFor(ctx, `xfer-${tag}-runner-N`)).join(" ")}`,
    plainCommands: { upload: lastLine(scripts.upload), download: lastLine(scripts.download) },
  };
}
