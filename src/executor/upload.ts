// Streams the checkout, the shared steps and the runner's own files into the pod as one tar, verified by sha256.
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { InfraError, InputError, describeError } from "../errors.js";
import { buildExecArgs } from "../k8s/kubectl-args.js";
import { buildHelperScript, buildUploadCommand } from "../pod/helper-script.js";
import { packTrees, type PackRoot } from "../transfer/pack-tree.js";
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

/** A pass-through stream that hashes and counts what flows through it. */
export function createHashTap(): { tap: Transform; digest: () => { sha256: string; bytes: number } } {
  const hash = createHash("sha256");
  let bytes = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      bytes += chunk.length;
      callback(null, chunk);
    },
  });
  return { tap, digest: () => ({ sha256: hash.digest("hex"), bytes }) };
}

/** Uploads everything the steps need in one exec; the archive is never held in memory. */
export async function uploadFiles(ctx: ExecutorContext, pod: RunPod): Promise<UploadSummary> {
  const { settings } = ctx;
  const staging = await stageRunnerFiles(settings.steps);
  try {
    const roots: PackRoot[] = [
      { hostDir: staging, archivePrefix: "knotless" },
      { hostDir: settings.checkoutDir, archivePrefix: "work" },
      ...(settings.sharedStepsDir ? [{ hostDir: settings.sharedStepsDir, archivePrefix: "steps" }] : []),
    ];
    return await withExecRetry(ctx, "upload", "exec-failed", async () => {
      const archive = packTrees(roots);
      const { tap, digest } = createHashTap();
      const kubectl = ctx.kubectl.stream(buildExecArgs(settings.target, pod.name, buildUploadCommand(), true), { stdin: true, signal: ctx.signal });
      let remoteSha = "";
      kubectl.stdout.setEncoding("utf8").on("data", (text: string) => (remoteSha += text));
      const piped = pipeline(archive.stream, tap, kubectl.stdin!).then(
        () => undefined,
        (error: unknown) => error,
      );
      const stats = await archive.done.catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
      const exit = await kubectl.exited;
      const pipeError = await piped;
      if (stats instanceof Error) throw new InputError(`cannot pack the files to upload: ${stats.message}`);
      if (exit.exitCode !== 0) return { ok: false, exit };
      if (pipeError) throw new InfraError("exec-failed", `upload stream failed: ${describeError(pipeError)}`);
      for (const skipped of stats.skipped) ctx.emit({ kind: "notice", level: "warning", message: `not uploaded: ${skipped.path} (${skipped.reason})` });
      const local = digest();
      if (remoteSha.trim() !== local.sha256) {
        throw new InfraError("integrity-mismatch", `upload integrity check failed: sent ${local.bytes} bytes with sha256 ${local.sha256}, the pod received ${JSON.stringify(remoteSha.trim()) || "nothing"}`);
      }
      return { ok: true, value: { files: stats.files, bytes: stats.bytes, archiveBytes: local.bytes, sha256: local.sha256 } };
    });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
