// Streams /outputs back from the pod into <out>/outputs through the hostile-archive extractor, checked against the pod's count.
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { InfraError, describeError } from "../../core/errors.js";
import { isExecSuccess } from "../../cluster/exec.js";
import { helperCommand } from "../../pod/helper-script.js";
import { extractOutputs, type ExtractReport } from "../../transfer/extract-outputs.js";
import { checkOutputsCount } from "../../transfer/transfer-receipt.js";
import { buildPodExec, type ExecutorContext } from "./context.js";
import type { RunPod } from "../executor.js";
import { withExecRetry } from "./exec-retry.js";

/** Most entries accepted from /outputs. */
export const MAX_OUTPUT_ENTRIES = 100_000;

export async function downloadOutputs(ctx: ExecutorContext, pod: RunPod): Promise<ExtractReport> {
  const { settings } = ctx;
  const destination = join(settings.outDir, "outputs");
  return withExecRetry(ctx, pod, "download", "download-failed", async () => {
    // The CLI made sure <out>/outputs was empty before the run: what is there now is a failed attempt's.
    await rm(destination, { recursive: true, force: true });
    // Reusable read buffers: the transport may read the archive into a few buffers the extractor gives back.
    const exec = await ctx.cluster.exec({
      ...buildPodExec(ctx, pod.name, helperCommand.packOutputs()),
      stdin: { kind: "none" },
      reuseBuffers: true,
    });
    if (exec.fallback !== undefined) ctx.emit({ kind: "notice", level: "info", message: `download: ${exec.fallback}` });
    let report: ExtractReport | undefined;
    let extractError: unknown;
    try {
      const limits = { maxBytes: settings.maxOutputBytes, maxEntries: MAX_OUTPUT_ENTRIES };
      report = await extractOutputs(
        exec.stdout,
        destination,
        limits,
        exec.giveBack ? { releaseChunk: exec.giveBack } : {},
      );
    } catch (error) {
      extractError = error;
    }
    if (!report || report.limitReached) exec.kill();
    const end = await exec.ended;
    if (report?.limitReached) return { ok: true, value: report };
    if (!isExecSuccess(end)) return { ok: false, end };
    if (!report)
      throw new InfraError("download-failed", `the outputs archive could not be read: ${describeError(extractError)}`);
    // The extractor already refused an archive cut short (no end-of-archive blocks); this catches whole entries lost.
    const mismatch = checkOutputsCount(report, end.tags);
    if (mismatch !== undefined)
      throw new InfraError("integrity-mismatch", `outputs integrity check failed: ${mismatch}`);
    return { ok: true, value: report };
  });
}
