// Collects one artifact: the pod lists its files, the host matches the patterns, the pod packs exactly those, the outputs' extractor writes them.
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CancelledError, describeError } from "../../core/errors.js";
import type { ArtifactFile, ArtifactReport, ArtifactSpec } from "../../workflow/artifact-types.js";
import { matchArtifactFiles, selectArtifact, type ArtifactSelection } from "./select-artifact.js";
import { describeExecSaid, isExecSuccess } from "../../cluster/exec.js";
import { runExec } from "../../cluster/run-exec.js";
import { cacheHelperCommand, FILES_LISTED_TAG, parseFilesPacked } from "../../pod/cache-script.js";
import { extractOutputs, type ExtractReport } from "../../transfer/extract-outputs.js";
import { buildPodExec, type ExecutorContext } from "./context.js";
import { MAX_OUTPUT_ENTRIES } from "./download.js";
import type { RunPod } from "../executor.js";

/** Where the artifacts of a run go: `<out>/artifacts/<name>/` and `<out>/artifacts/<name>.manifest.json`. */
export function artifactPaths(outDir: string, name: string): { readonly dir: string; readonly manifest: string } {
  const base = join(outDir, "artifacts");
  return { dir: join(base, name), manifest: join(base, `${name}.manifest.json`) };
}

/** A failure of one artifact's collection: its report says why. */
class ArtifactError extends Error {}

/** Collects `spec` (see Executor.collectArtifact); resolves with its report, rejects only with CancelledError. */
export async function collectArtifact(
  ctx: ExecutorContext,
  pod: RunPod,
  spec: ArtifactSpec,
  maxBytes: number,
): Promise<ArtifactReport> {
  const plan = selectArtifact(spec);
  if ("problem" in plan) return { name: spec.name, status: "failed", files: [], reason: plan.problem };
  try {
    const listed = await listPodFiles(ctx, pod, plan);
    const { files, unpackable } = matchArtifactFiles(plan, listed);
    const skipped =
      unpackable.length > 0
        ? `; left out ${unpackable.length} file(s) whose names hold a newline (${unpackable
            .slice(0, 3)
            .map((p) => JSON.stringify(p))
            .join(", ")})`
        : "";
    if (files.length === 0)
      return {
        name: spec.name,
        status: "empty",
        files: [],
        reason: `no file in the pod matches ${spec.paths.join(", ")}${skipped}`,
      };
    const paths = artifactPaths(ctx.settings.outDir, spec.name);
    const report = await packAndExtract(ctx, pod, plan, files, paths.dir, maxBytes);
    const collected: ArtifactFile[] = [...report.files].map((file) => ({
      path: file.path,
      size: file.size,
      sha256: file.sha256,
    }));
    await writeFile(
      paths.manifest,
      `${JSON.stringify({ name: spec.name, root: plan.packRoot, patterns: spec.paths, files: collected, refused: report.refused }, null, 2)}\n`,
    );
    const notes = [
      ...(report.refused.length > 0
        ? [
            `refused ${report.refused.length}: ${report.refused
              .slice(0, 3)
              .map((r) => `${r.path} (${r.reason})`)
              .join(", ")}`,
          ]
        : []),
      ...(report.limitReached ? [`stopped at the limit of ${maxBytes} bytes`] : []),
    ];
    const reason = `${notes.join("; ")}${skipped}`.replace(/^; /, "");
    return {
      name: spec.name,
      status: "collected",
      files: collected,
      manifest: paths.manifest,
      ...(reason ? { reason } : {}),
    };
  } catch (error) {
    if (error instanceof CancelledError || ctx.signal.aborted)
      throw error instanceof CancelledError ? error : new CancelledError();
    return { name: spec.name, status: "failed", files: [], reason: describeError(error) };
  }
}

/** Runs `list-files` on the plan's roots: the pod's regular files there, absolute. */
async function listPodFiles(ctx: ExecutorContext, pod: RunPod, plan: ArtifactSelection): Promise<string[]> {
  // Every path under the artifact's roots: as wide a bound as an artifact's files may need.
  const listed = await runExec(
    ctx.cluster,
    buildPodExec(ctx, pod.name, cacheHelperCommand.listFiles(plan.listRoots)),
    undefined,
    64 * 1024 * 1024,
  );
  if (ctx.signal.aborted) throw new CancelledError();
  if (!isExecSuccess(listed.end) || !listed.end.tags.includes(FILES_LISTED_TAG)) {
    throw new ArtifactError(
      `listing the pod's files failed (${listed.end.how}): ${describeExecSaid(listed.end) || "the pod did not finish the listing"}`,
    );
  }
  return listed.stdout.split("\0").filter((path) => path !== "");
}

/** Runs `pack-files` with `files` on its stdin and extracts its archive into `dir`; every file named must arrive. */
async function packAndExtract(
  ctx: ExecutorContext,
  pod: RunPod,
  plan: ArtifactSelection,
  files: readonly string[],
  dir: string,
  maxBytes: number,
): Promise<ExtractReport> {
  await rm(dir, { recursive: true, force: true });
  const exec = await ctx.cluster.exec({
    ...buildPodExec(ctx, pod.name, cacheHelperCommand.packFiles(plan.packRoot)),
    stdin: { kind: "pipe" },
  });
  exec.stdout.pause(); // held until the extractor, which first makes its directory, takes it
  const stdin = exec.stdin!;
  stdin.on("error", () => {}); // the exec gone early: its end says why
  stdin.end(`${files.join("\n")}\n`);
  let report: ExtractReport | undefined;
  let extractError: unknown;
  try {
    // Concatenated: a tar without -T packs a long list in several runs of `xargs tar -c` (src/pod/cache-script.ts).
    report = await extractOutputs(
      exec.stdout,
      dir,
      { maxBytes, maxEntries: MAX_OUTPUT_ENTRIES },
      { concatenated: true },
    );
  } catch (error) {
    extractError = error;
  }
  if (!report || report.limitReached) exec.kill();
  const end = await exec.ended;
  if (ctx.signal.aborted) throw new CancelledError();
  if (report?.limitReached) return report;
  if (!isExecSuccess(end)) throw new ArtifactError(`packing in the pod failed (${end.how}): ${describeExecSaid(end)}`);
  if (!report) throw new ArtifactError(`the archive could not be read: ${describeError(extractError)}`);
  const tar = parseFilesPacked(end.tags);
  if (tar !== "0")
    throw new ArtifactError(
      `the pod's tar ${tar === undefined ? "did not report its exit" : `exited ${tar}`}: ${describeExecSaid(end)}`,
    );
  // One member per file named: fewer means the stream lost some, more that the pod packed what it was not asked for.
  if (report.entries !== files.length)
    throw new ArtifactError(`the archive had ${report.entries} entries for the ${files.length} files asked for`);
  return report;
}
