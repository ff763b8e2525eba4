// A scriptable Executor that records its calls, for testing the run's orchestration without kubectl.
import { CancelledError } from "../../src/core/errors.js";
import type { ExecutorContext } from "../../src/executor/kubernetes/context.js";
import type {
  AttachedPod,
  Executor,
  RunPod,
  StepOutcome,
  TeardownReport,
  UploadSummary,
} from "../../src/executor/executor.js";
import type { ArtifactReport, ArtifactSpec } from "../../src/workflow/artifact-types.js";
import type { CacheSpec, CacheWriter } from "../../src/workflow/cache-types.js";
import type { CacheArchive, CacheArchiveGate, CacheSaveOutcome } from "../../src/executor/cache-archive.js";
import type { ExtractReport } from "../../src/transfer/extract-outputs.js";
import type { UploadTrees } from "../../src/transfer/scan-tree.js";

/** What each lifecycle call does; an absent entry succeeds at once. */
export interface ExecutorScript {
  readonly setup?: (ctx: ExecutorContext) => Promise<RunPod>;
  /** Default: the scripted pod, which shows the upload done and no step started, holding no secret. */
  readonly attach?: (ctx: ExecutorContext, pod: string | undefined) => Promise<AttachedPod>;
  readonly copyIn?: (ctx: ExecutorContext) => Promise<UploadSummary>;
  readonly runStep?: (index: number, deadlineAt: number, ctx: ExecutorContext) => Promise<StepOutcome>;
  readonly copyOut?: (ctx: ExecutorContext) => Promise<ExtractReport>;
  readonly restoreCache?: (
    spec: CacheSpec,
    archive: CacheArchive,
    gate: CacheArchiveGate | undefined,
    ctx: ExecutorContext,
  ) => Promise<{ bytes: number }>;
  readonly saveCache?: (spec: CacheSpec, writer: CacheWriter, ctx: ExecutorContext) => Promise<CacheSaveOutcome>;
  readonly collectArtifact?: (spec: ArtifactSpec, maxBytes: number, ctx: ExecutorContext) => Promise<ArtifactReport>;
  readonly teardown?: (ctx: ExecutorContext) => Promise<TeardownReport>;
}

export const SCRIPTED_POD: RunPod = { name: "knotless-run-42-abcde", node: "node-1" };
export const STEP_SUCCEEDED: StepOutcome = { status: "success", exitCode: 0, timedOut: false };
export const EMPTY_REPORT: ExtractReport = {
  files: [],
  refused: [],
  bytes: 0,
  limitReached: false,
  entries: 0,
  nameNewlines: 0,
};

export class ScriptedExecutor implements Executor {
  /** Every call in the order it came: "setup", "copyIn", "restoreCache KEY", "runStep 0", "saveCache KEY", "copyOut", "collectArtifact NAME", "teardown" (or "leave"). */
  readonly calls: string[] = [];
  /** The deadline each runStep was given, by step index. */
  readonly deadlines = new Map<number, number>();
  namespace: string | undefined;
  pod: RunPod | undefined;
  /** The scanned trees copyIn was handed. */
  trees: UploadTrees | undefined;

  constructor(
    readonly ctx: ExecutorContext,
    readonly script: ExecutorScript,
  ) {
    this.namespace = ctx.settings.target.namespace;
  }

  async setup(): Promise<RunPod> {
    this.calls.push("setup");
    this.pod = await (this.script.setup?.(this.ctx) ?? Promise.resolve(SCRIPTED_POD));
    return this.pod;
  }

  async attach(pod?: string): Promise<AttachedPod> {
    this.calls.push("attach");
    const attached = await (this.script.attach?.(this.ctx, pod) ??
      Promise.resolve({
        pod: SCRIPTED_POD,
        state: { uploaded: true, secrets: false, outputsPacked: false, steps: new Map() },
        secrets: [],
      }));
    this.pod = attached.pod;
    return attached;
  }

  async copyIn(trees: UploadTrees): Promise<UploadSummary> {
    this.calls.push("copyIn");
    this.trees = trees;
    return this.script.copyIn?.(this.ctx) ?? { files: 1, bytes: 1, archiveBytes: 2048, entries: 1 };
  }

  async runStep(
    index: number,
    deadlineAt: number,
    from?: { readonly stdout: number; readonly stderr: number },
  ): Promise<StepOutcome> {
    this.calls.push(from ? `runStep ${index} from ${from.stdout}/${from.stderr}` : `runStep ${index}`);
    this.deadlines.set(index, deadlineAt);
    return this.script.runStep?.(index, deadlineAt, this.ctx) ?? STEP_SUCCEEDED;
  }

  async restoreCache(spec: CacheSpec, archive: CacheArchive, gate?: CacheArchiveGate): Promise<{ bytes: number }> {
    this.calls.push(`restoreCache ${spec.key}`);
    if (this.script.restoreCache) return this.script.restoreCache(spec, archive, gate, this.ctx);
    let bytes = 0;
    archive.stream.on("data", (chunk: Buffer) => (bytes += chunk.length));
    const passed = gate ? archive.stream.pipe(gate.stream) : archive.stream;
    const failed = new Promise((_resolve, reject) => archive.stream.once("error", reject));
    await Promise.race([
      (async () => {
        for await (const _chunk of passed);
      })(),
      failed,
    ]);
    await gate?.done;
    return { bytes };
  }

  async saveCache(spec: CacheSpec, writer: CacheWriter): Promise<CacheSaveOutcome> {
    this.calls.push(`saveCache ${spec.key}`);
    if (this.script.saveCache) return this.script.saveCache(spec, writer, this.ctx);
    const archive = Buffer.from(`archive of ${spec.paths.join(" ")}`);
    writer.stream.end(archive);
    return { status: await writer.commit(), bytes: archive.length, missing: [] };
  }

  async collectArtifact(spec: ArtifactSpec, maxBytes: number): Promise<ArtifactReport> {
    this.calls.push(`collectArtifact ${spec.name}`);
    return (
      this.script.collectArtifact?.(spec, maxBytes, this.ctx) ?? {
        name: spec.name,
        status: "collected",
        files: [{ path: "a.txt", size: 1, sha256: "0".repeat(64) }],
      }
    );
  }

  async copyOut(): Promise<ExtractReport> {
    this.calls.push("copyOut");
    return this.script.copyOut?.(this.ctx) ?? EMPTY_REPORT;
  }

  async teardown(): Promise<TeardownReport> {
    this.calls.push("teardown");
    return this.script.teardown?.(this.ctx) ?? { deleted: true, leftBehind: false, detail: "deleted" };
  }

  async leave(): Promise<void> {
    this.calls.push("leave");
  }
}

/** Settles like a real executor call that the run's signal stops: rejects with CancelledError once it is aborted. */
export function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => {
    const stop = (): void => reject(new CancelledError());
    if (signal.aborted) stop();
    else signal.addEventListener("abort", stop, { once: true });
  });
}
