// Streams the checkout, the shared steps and the runner's own files into the pod as one tar, with a receipt the pod checks.
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { InfraError, InputError, describeError } from "../errors.js";
import { buildExecArgs } from "../k8s/kubectl-args.js";
import { buildHelperScript, buildUploadCommand } from "../pod/helper-script.js";
import { PackStoppedError, packTrees, type PackRoot, type PackStats } from "../transfer/pack-tree.js";
import { UPLOAD_RECEIPT_ARCHIVE_PATH, buildUploadReceipt, checkUploadReply, expectedFindLines, type CountedTree } from "../transfer/transfer-receipt.js";
import type { ExecutorContext } from "./context.js";
import type { RunPod, UploadSummary } from "./executor.js";
import { withExecRetry } from "./exec-retry.js";
import type { StepSpec } from "../input/steps-file.js";

/** Writes helper.sh and steps/N.sh into a fresh host directory, to be packed under /knotless. */
export async function stageRunnerFiles(steps: readonly StepSpec[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "knotless-runner-"));
  await mkdir(join(dir, "steps"));
  await writeFile(join(dir, "helper.sh"), buildHelperScript(), { mode: 0o755 });
  await Promise.all(steps.map((step, index) => writeFile(join(dir, "steps", `${index}.sh`), `${step.script}\n`, { mode: 0o644 })));
  return dir;
}

/** What the pod's `find /work /steps` should see: the roots packed under these prefixes (an absent one is empty). */
function countMounts(packed: PackStats, roots: readonly PackRoot[], prefixes: readonly string[]): CountedTree[] {
  return prefixes.map((prefix) => {
    const index = roots.findIndex((root) => root.archivePrefix === prefix);
    return { entries: packed.entriesByRoot[index] ?? 0, nameNewlines: packed.nameNewlinesByRoot[index] ?? 0 };
  });
}

/**
 * Uploads everything the steps need in one exec; the archive is never held in memory. `staging` is the directory
 * stageRunnerFiles made (the executor stages while the pod starts and removes it at teardown, off the run's path).
 */
export async function uploadFiles(ctx: ExecutorContext, pod: RunPod, staging: string): Promise<UploadSummary> {
  const { settings } = ctx;
  const roots: PackRoot[] = [
    { hostDir: staging, archivePrefix: "knotless" },
    { hostDir: settings.checkoutDir, archivePrefix: "work" },
    ...(settings.sharedStepsDir ? [{ hostDir: settings.sharedStepsDir, archivePrefix: "steps" }] : []),
  ];
  return await withExecRetry(ctx, pod, "upload", "exec-failed", async () => {
    let expected: { receipt: string; findLines: number } | undefined;
    const nonce = randomBytes(8).toString("hex");
    const archive = packTrees(roots, {
      trailer: (packed) => {
        const receipt = buildUploadReceipt(nonce, packed.entriesByRoot.reduce((sum, n) => sum + n, 0), packed.archiveBytes);
        expected = { receipt, findLines: expectedFindLines(countMounts(packed, roots, ["work", "steps"])) };
        return { path: UPLOAD_RECEIPT_ARCHIVE_PATH, content: Buffer.from(receipt) };
      },
    });
    const kubectl = ctx.kubectl.stream(buildExecArgs(settings.target, pod.name, buildUploadCommand(), true), { stdin: true, signal: ctx.signal });
    let reply = "";
    kubectl.stdout.setEncoding("utf8").on("data", (text: string) => (reply += text));
    const piped = pipeline(archive.stream, writingBack(kubectl.stdin!, archive.giveBack)).then(
      () => undefined,
      (error: unknown) => error,
    );
    const stats = await archive.done.catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
    const exit = await kubectl.exited;
    const pipeError = await piped;
    // A host file that could not be packed is bad input; packing stopped because kubectl went away is kubectl's
    // failure, judged by its exit like any exec.
    if (stats instanceof Error && !(stats instanceof PackStoppedError)) throw new InputError(`cannot pack the files to upload: ${stats.message}`);
    if (exit.exitCode !== 0) return { ok: false, exit };
    if (pipeError || stats instanceof Error) throw new InfraError("exec-failed", `upload stream failed: ${describeError(pipeError ?? stats)}`);
    for (const skipped of stats.skipped) ctx.emit({ kind: "notice", level: "warning", message: `not uploaded: ${skipped.path} (${skipped.reason})` });
    const mismatch = expected ? checkUploadReply(expected, reply) : "the archive was never finished";
    if (mismatch !== undefined) {
      throw new InfraError("integrity-mismatch", `upload integrity check failed after sending ${stats.archiveBytes} bytes: ${mismatch}`);
    }
    const entries = stats.entriesByRoot.reduce((sum, n) => sum + n, 0);
    return { ok: true, value: { files: stats.files, bytes: stats.bytes, archiveBytes: stats.archiveBytes, entries } };
  });
}

/**
 * A Writable in front of kubectl's stdin that gives each chunk back to the packer once stdin has written
 * it, so the packer refills the same few batches (BatchPool). Writes go one at a time, like a pipe into
 * stdin would (it waits for "drain" after each batch-sized write); errors and the end pass through.
 */
function writingBack(stdin: Writable, giveBack: (chunk: Buffer) => void): Writable {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      stdin.write(chunk, (error) => {
        if (!error) giveBack(chunk);
        callback(error);
      });
    },
    final(callback) {
      stdin.end(callback);
    },
    destroy(error, callback) {
      if (error) stdin.destroy(error);
      callback(error);
    },
  });
  stdin.on("error", (error) => sink.destroy(error));
  return sink;
}
