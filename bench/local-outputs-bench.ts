// Local-cluster benchmark 4: 200 MB / 10,000 files in /outputs brought back, runner's download against plain tar.
import { mkdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { BenchCluster } from "./local-cluster-env.js";
import { buildDeleteScript, buildDiscardingExecScript, buildPlainDownloadScript } from "./local-plain-scripts.js";
import {
  FILL_OUTPUTS_STEP,
  OUTPUT_FILE_BYTES,
  OUTPUT_FILES,
  prepareSmallCheckout,
  writeStepsFile,
} from "./local-workflows.js";
import { buildRunnerArgs, runRunnerTimed, type RunnerInvocation } from "./runner-cli.js";
import { readRunLog } from "./run-log.js";
import { summarizeValues, type Summary } from "./stats.js";
import { assertSucceeded, runTimed } from "./timed-process.js";
import { countTree } from "./transfer-bench.js";
import { measureTransferParts, type TransferParts } from "./transfer-parts.js";

const TOTAL_BYTES = OUTPUT_FILES * OUTPUT_FILE_BYTES;
const RSS_POLL_MS = 50;
export const PACK_OUTPUTS_COMMAND = "sh /knotless/helper.sh pack-outputs";
export const TAR_OUTPUTS_COMMAND = "tar -cf - -C /outputs .";
export const IN_POD_TAR = "tar -cf - -C /outputs . | cat > /dev/null";
export const IN_POD_PACK = "sh /knotless/helper.sh pack-outputs 2>/dev/null | cat > /dev/null";

export interface OutputsRep {
  /** The runner's download phase (log.ndjson). */
  readonly runnerMs: number;
  /** The runner process's peak RSS (VmHWM), KiB. */
  readonly runnerPeakRssKiB: number;
  /** The fill step inside the runner's run (not compared; it shows what the bench spent). */
  readonly fillMs: number;
  /** `kubectl exec POD -c run -- tar -cf - -C /outputs . | tar -xf - -C DEST`, spawn → exit, same pod. */
  readonly plainMs: number;
  /** The runner's download exec with stdout discarded: pod side (tar, then find | wc -l) and transport, no host extraction. */
  readonly packOutputsDiscardMs: number;
  /** `kubectl exec ... tar -cf - -C /outputs . > /dev/null`: plain tar and transport, no host extraction. */
  readonly tarDiscardMs: number;
  /** Inside the pod only (podman exec, no kubectl, no transport): `tar -cf - -C /outputs . | cat > /dev/null`. */
  readonly inPodTarMs: number;
  /** Inside the pod only: `sh /knotless/helper.sh pack-outputs 2>/dev/null | cat > /dev/null` (tar, then find | wc -l). */
  readonly inPodPackMs: number;
}

export interface OutputsResult {
  readonly reps: readonly OutputsRep[];
  readonly runner: Summary;
  readonly plain: Summary;
  readonly packOutputsDiscard: Summary;
  readonly tarDiscard: Summary;
  readonly inPodTar: Summary;
  readonly inPodPack: Summary;
  readonly peakRssMiB: Summary;
  /** The host side alone, once: GNU tar -c of the downloaded tree into extractOutputs, against tar -c | tar -x. */
  readonly hostParts: TransferParts;
  readonly bytes: number;
  readonly files: number;
  readonly runnerCommand: string;
  readonly plainCommand: string;
  readonly fillStep: string;
}

export async function runLocalOutputsBench(
  bench: BenchCluster,
  workDir: string,
  baseEnv: Record<string, string>,
  reps: number,
  log: (line: string) => void,
): Promise<OutputsResult> {
  const checkoutDir = await prepareSmallCheckout(workDir);
  const stepsFile = await writeStepsFile(workDir, "fill-steps.tsv", [["fill", FILL_OUTPUTS_STEP]]);
  const { cluster, kubectlPath } = bench;
  const invocationFor = (runId: string): RunnerInvocation => ({
    checkoutDir,
    stepsFile,
    outDir: join(workDir, runId),
    kubectlPath,
    kubeconfigPath: cluster.kubeconfigPath,
    runId,
    extraArgs: ["--keep", "--max-output-bytes", "1Gi", "--timeout", "20m"],
  });
  const results: OutputsRep[] = [];
  let hostParts: TransferParts | undefined;
  for (let rep = 0; rep < reps; rep++) {
    const runId = `lout-${rep}`;
    const invocation = invocationFor(runId);
    await bench.quiesce();
    const timed = await runRunnerTimed(invocation, baseEnv, RSS_POLL_MS);
    const runLog = await readRunLog(invocation.outDir);
    const result = JSON.parse(await readFile(join(invocation.outDir, "result.json"), "utf8")) as {
      status: string;
      job: { pod: string; name: string };
      outputs: Array<{ size: number }>;
    };
    const env = {
      ...baseEnv,
      K: kubectlPath,
      KC: cluster.kubeconfigPath,
      NS: "default",
      JOB: result.job.name,
      POD: result.job.pod,
    };
    const dest = join(workDir, `${runId}-plain`, "outputs");
    try {
      const got = result.outputs.reduce((sum, o) => sum + o.size, 0);
      if (result.status !== "success" || result.outputs.length !== OUTPUT_FILES || got !== TOTAL_BYTES) {
        throw new Error(
          `runner ${runId}: status ${result.status}, ${result.outputs.length} outputs / ${got} bytes, expected ${OUTPUT_FILES} / ${TOTAL_BYTES}`,
        );
      }
      const download = runLog.phases.download;
      if (!download) throw new Error(`runner ${runId}: no download phase`);
      await rm(invocation.outDir, { recursive: true, force: true });
      // The same pod and files right after the runner's download: plain tar, then the two discarding execs, in rotating order.
      const measures: Record<"plain" | "pack" | "tar", () => Promise<number>> = {
        plain: async () => {
          const r = await runTimed("sh", ["-c", buildPlainDownloadScript()], { env: { ...env, DEST: dest } });
          assertSucceeded("plain download", r);
          const tree = await countTree(dest);
          if (tree.files !== OUTPUT_FILES || tree.bytes !== TOTAL_BYTES)
            throw new Error(`plain download: ${tree.files} files / ${tree.bytes} bytes`);
          return r.wallMs;
        },
        pack: async () => {
          const r = await runTimed("sh", ["-c", buildDiscardingExecScript(PACK_OUTPUTS_COMMAND)], { env });
          assertSucceeded("discarding pack-outputs exec", r);
          return r.wallMs;
        },
        tar: async () => {
          const r = await runTimed("sh", ["-c", buildDiscardingExecScript(TAR_OUTPUTS_COMMAND)], { env });
          assertSucceeded("discarding tar exec", r);
          return r.wallMs;
        },
      };
      const inPod = async (script: string): Promise<number> => {
        const started = process.hrtime.bigint();
        const r = await cluster.podExec("default", result.job.pod, ["sh", "-c", script]);
        if (r.code !== 0) throw new Error(`podman exec ${script} exited ${r.code}: ${r.stderr}`);
        return Number(process.hrtime.bigint() - started) / 1e6;
      };
      const order = (["plain", "pack", "tar"] as const).map(
        (_, i, all) => all[(i + rep) % all.length] as "plain" | "pack" | "tar",
      );
      const times: Partial<Record<"plain" | "pack" | "tar", number>> = {};
      for (const which of order) times[which] = await measures[which]();
      const inPodTarMs = await inPod(IN_POD_TAR);
      const inPodPackMs = await inPod(IN_POD_PACK);
      if (!hostParts) {
        log(`  outputs: host-side parts on the downloaded tree (once) ...`);
        await mkdir(join(workDir, "parts"), { recursive: true });
        hostParts = await measureTransferParts(dest, join(workDir, "parts"), TOTAL_BYTES);
      }
      const row: OutputsRep = {
        runnerMs: download.durationMs,
        runnerPeakRssKiB: timed.peakRssKiB ?? 0,
        fillMs: runLog.steps[0]?.durationMs ?? NaN,
        plainMs: times.plain as number,
        packOutputsDiscardMs: times.pack as number,
        tarDiscardMs: times.tar as number,
        inPodTarMs,
        inPodPackMs,
      };
      results.push(row);
      log(
        `  outputs rep ${rep + 1}/${reps}: runner download ${row.runnerMs} ms (peak RSS ${(row.runnerPeakRssKiB / 1024).toFixed(1)} MiB), plain ${row.plainMs.toFixed(0)} ms; discarding execs: pack-outputs ${row.packOutputsDiscardMs.toFixed(0)} ms, tar ${row.tarDiscardMs.toFixed(0)} ms; in the pod alone: pack-outputs ${row.inPodPackMs.toFixed(0)} ms, tar ${row.inPodTarMs.toFixed(0)} ms (fill step ${row.fillMs} ms)`,
      );
    } finally {
      assertSucceeded(`delete ${result.job.name}`, await runTimed("sh", ["-c", buildDeleteScript()], { env }));
      await rm(invocation.outDir, { recursive: true, force: true });
      await rm(join(workDir, `${runId}-plain`), { recursive: true, force: true });
    }
  }
  if (!hostParts) throw new Error("no repetition ran");
  return {
    reps: results,
    runner: summarizeValues(results.map((r) => r.runnerMs)),
    plain: summarizeValues(results.map((r) => r.plainMs)),
    packOutputsDiscard: summarizeValues(results.map((r) => r.packOutputsDiscardMs)),
    tarDiscard: summarizeValues(results.map((r) => r.tarDiscardMs)),
    inPodTar: summarizeValues(results.map((r) => r.inPodTarMs)),
    inPodPack: summarizeValues(results.map((r) => r.inPodPackMs)),
    peakRssMiB: summarizeValues(results.map((r) => r.runnerPeakRssKiB / 1024)),
    hostParts,
    bytes: TOTAL_BYTES,
    files: OUTPUT_FILES,
    runnerCommand: `node ${buildRunnerArgs(invocationFor("lout-N")).join(" ")}`,
    plainCommand: `${kubectlPath} --kubeconfig KC --namespace default exec POD -c run -- tar -cf - -C /outputs . | tar -xf - -C DEST`,
    fillStep: FILL_OUTPUTS_STEP,
  };
}
