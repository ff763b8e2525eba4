// Streams /outputs back from the pod into <out>/outputs through the hostile-archive extractor, checked against the pod's count.
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { InfraError, describeError } from "../errors.js";
import { buildExecArgs } from "../cluster/kubectl/kubectl-args.js";
import type { KubectlExit } from "../cluster/kubectl/kubectl.js";
import { openPooledStdout } from "../cluster/kubectl/pooled-stdout.js";
import { helperCommand } from "../pod/helper-script.js";
import { extractOutputs, type ExtractReport } from "../transfer/extract-outputs.js";
import { checkOutputsCount } from "../transfer/transfer-receipt.js";
import type { ExecutorContext } from "./context.js";
import type { RunPod } from "./executor.js";
import { withExecRetry } from "./exec-retry.js";

/** Most entries accepted from /outputs. */
export const MAX_OUTPUT_ENTRIES = 100_000;

export async function downloadOutputs(ctx: ExecutorContext, pod: RunPod): Promise<ExtractReport> {
  const { settings } = ctx;
  const destination = join(settings.outDir, "outputs");
  return withExecRetry(ctx, pod, "download", "download-failed", async () => {
    // The CLI made sure <out>/outputs was empty before the run: what is there now is a failed attempt's.
    await rm(destination, { recursive: true, force: true });
    // Reusable read buffers are an optimization: where the temp dir cannot hold the socket, a pipe does the job.
    const pooled = await openPooledStdout().catch((error: unknown) => {
      ctx.emit({ kind: "notice", level: "info", message: `download: reading kubectl's output through a pipe (${describeError(error)})` });
      return undefined;
    });
    let exit: KubectlExit;
    let report: ExtractReport | undefined;
    let extractError: unknown;
    try {
      const kubectl = ctx.kubectl.stream(buildExecArgs(settings.target, pod.name, helperCommand.packOutputs(), false), { signal: ctx.signal, stdout: pooled });
      try {
        const limits = { maxBytes: settings.maxOutputBytes, maxEntries: MAX_OUTPUT_ENTRIES };
        report = await extractOutputs(kubectl.stdout, destination, limits, { releaseChunk: pooled?.giveBack });
      } catch (error) {
        extractError = error;
      }
      if (!report || report.limitReached) kubectl.kill();
      exit = await kubectl.exited;
    } finally {
      pooled?.readable.destroy();
    }
    if (report?.limitReached) return { ok: true, value: report };
    if (exit.exitCode !== 0) return { ok: false, exit };
    if (!report) throw new InfraError("download-failed", `the outputs archive could not be read: ${describeError(extractError)}`);
    // The extractor already refused an archive cut short (no end-of-archive blocks); this catches whole entries lost.
    const mismatch = checkOutputsCount(report, exit.stderr);
    if (mismatch !== undefined) throw new InfraError("integrity-mismatch", `outputs integrity check failed: ${mismatch}`);
    return { ok: true, value: report };
  });
}
