// The executor's lifecycle contract: what each call may assume and what it guarantees.
import type { ArtifactReport, ArtifactSpec } from "../workflow/artifact-types.js";
import type { CacheSpec, CacheWriter } from "../workflow/cache-types.js";
import type { InfraReason } from "../core/errors.js";
import type { CacheArchive, CacheArchiveGate, CacheSaveOutcome } from "./cache-archive.js";
import type { ExtractReport } from "../transfer/extract-outputs.js";
import type { PodCloneSpec } from "../pod/git-clone-script.js";
import type { UploadTrees } from "../transfer/scan-tree.js";
import type { PodRunState } from "../pod/pod-run-state.js";

/** The pod that runs the steps, once setup has succeeded. */
export interface RunPod {
  readonly name: string;
  readonly node: string;
}

/** How one step ended. Every field is present whatever the status. */
export interface StepOutcome {
  readonly status: "success" | "failed" | "timeout";
  /** The step's own exit code as its wrapper wrote it in the pod; null when it was killed on timeout. */
  readonly exitCode: number | null;
  readonly timedOut: boolean;
}

export interface UploadSummary {
  readonly files: number;
  /** Content bytes of the regular files, when the packer counted them (a host GNU tar does not say). */
  readonly bytes: number | undefined;
  readonly archiveBytes: number;
  /** Archive members (files, directories, symlinks), the receipt excluded. */
  readonly entries: number;
}

/** What attach found: the run's pod, what it shows of the run's progress, and the secrets it still holds. */
export interface AttachedPod {
  readonly pod: RunPod;
  readonly state: PodRunState;
  /** Read back from the pod's memory-backed volume, into memory only; empty when the pod holds none (any more). */
  readonly secrets: ReadonlyArray<{ readonly name: string; readonly value: string }>;
}

/** What teardown did. */
export interface TeardownReport {
  /** The Job is gone (deleted now, or already gone). */
  readonly deleted: boolean;
  /** A Job this run created is still there although the run did not ask to keep it: the delete failed. */
  readonly leftBehind: boolean;
  /** One line for the log; when the Job is left behind, it ends with the command that deletes it. */
  readonly detail: string;
  /** When the Job is left because the API server refused the delete (or the read that tells it is ours): why. */
  readonly reason?: InfraReason;
}

/**
 * One workflow run's execution environment (in the shape of Woodpecker's backend and Tangled spindle's engine).
 * Calls come in this order: setup, copyIn, restoreCache for each cache, runStep for each step, saveCache for each
 * cache to save, copyOut, collectArtifact for each artifact, teardown; any of them may be skipped after a failure
 * except teardown. All calls but teardown stop early with CancelledError when the run's signal
 * is aborted, and throw InfraError when the infrastructure (not the user's step) failed.
 */
export interface Executor {
  /** The Job's namespace once known (given, or reported by create); readable at any time, for the result. */
  readonly namespace: string | undefined;
  /** The run's pod once setup has succeeded; readable at any time, for the result. */
  readonly pod: RunPod | undefined;
  /** Whether setup claimed a warm placeholder ("warm") or not ("cold"), once it looked; for the result. */
  readonly capacity?: "warm" | "cold" | undefined;
  /** From the Job's creation to its pod running, ms, once it runs; for the result. */
  readonly podWaitMs?: number | undefined;
  /**
   * Creates the run's Job and waits until its pod runs. Called once. Reports Pending progress as events. Refuses an
   * environment the steps cannot carry (a bad name, a NUL) as InputError before any cluster call. Once the
   * Job exists, the run's presence in the cluster (a heartbeat, a watch for a cancel requested there, which calls
   * the context's requestCancel) lasts until teardown. The heartbeat's first refresh is made at once: when the API
   * server refuses it (403, 401: no patch on jobs) setup fails with that InfraError, since gc would take a run that
   * cannot refresh its heartbeat for abandoned; teardown then deletes the Job as after any failed setup.
   */
  setup(): Promise<RunPod>;
  /**
   * Instead of setup, for a run a stopped runner left (a restart, `run --resume`, an adopter): finds the run's Job
   * (settings.jobName in settings.target.namespace) and its running pod (`pod`, when the caller knows its name), takes the run's presence in the cluster
   * over (heartbeat, cancel watch) as setup would, reads the pod's state (`helper.sh state`) and the secrets it holds
   * (over an exec's stdout, into memory only: never logged). From then on the Job is this run's, and teardown
   * deletes it. Throws InfraError "runner-lost" saying what was found when the Job is gone, its pod has ended or
   * cannot be read. Optional: an executor without it cannot resume a run. Called once, never after setup.
   */
  attach?(pod?: string): Promise<AttachedPod>;
  /**
   * Streams the checkout to /work, the shared steps to /steps and the runner's files into the pod, the steps'
   * variables included (/knotless/env); verifies that the pod received it whole (src/transfer/transfer-receipt.ts).
   * Then, when the run has secrets, a second exec writes them from its stdin into the pod's memory-backed
   * /knotless-secrets (its argv names none) and the pod's receipt and byte count prove they all arrived; a step never
   * starts without them. `trees` are the scans of the checkout and shared steps made before setup
   * (scanUploadTrees), which found them readable. After setup.
   */
  copyIn(trees: UploadTrees): Promise<UploadSummary>;
  /**
   * Whether the pod's image has git, for a checkout cloned in the pod (settings.gitCheckout). After setup, before
   * copyIn. Optional: an executor without it has such a checkout cloned on the host and uploaded.
   */
  hasGit?(): Promise<boolean>;
  /**
   * Clones the commit into /work in the pod, Tangled's way (git init, a fetch of exactly that commit at the depth,
   * checkout of FETCH_HEAD, submodules when asked), as the "clone" phase. After copyIn, when hasGit said yes.
   * Throws InfraError "checkout-failed" when git failed (with its words).
   */
  cloneCheckout?(spec: PodCloneSpec): Promise<void>;
  /**
   * Runs step `index` to its end in the pod (one exec in the normal case) and streams its output as events.
   * A step that exits non-zero or times out is a result, not an error. `deadlineAt` (epoch ms) bounds it; on
   * expiry every process of the step in the pod is terminated before this returns; on a cancel too (within the
   * context's cleanupSignal), before it rejects with CancelledError. After copyIn. `from`, after attach: the step was
   * started by the runner that stopped; it is followed from these byte offsets of its stdout and stderr (what that
   * runner had relayed) instead of being started.
   */
  runStep(
    index: number,
    deadlineAt: number,
    from?: { readonly stdout: number; readonly stderr: number },
  ): Promise<StepOutcome>;
  /**
   * Streams one stored cache archive (gzip'd tar, members relative to `/`) into the pod and extracts it at `/`; resolves
   * with the bytes sent once the pod confirmed gunzip checked the gzip trailer (CRC32 and length) and tar read to its
   * end. Otherwise it throws CacheTransferError (a warning for the run: `corrupt` when the store's stream failed its
   * checksum) and the pod has removed those of `spec.paths` that were absent before, so no half-restored cache is
   * left. With `gate`, the bytes pass through the hostile-archive gate on the host first: the pod gets only checked
   * bytes, and a refusal cuts its stream there (the pod cleans up as for a cut). Refuses paths under /knotless and /knotless-secrets. After
   * copyIn, before the first step.
   */
  restoreCache(spec: CacheSpec, archive: CacheArchive, gate?: CacheArchiveGate): Promise<{ readonly bytes: number }>;
  /**
   * Packs `spec.paths` in the pod (`tar -c` of those that exist, skipping the others, `| zstd -1`, or `| gzip -1`
   * where the image has no zstd) and streams the archive into `writer`; commits it only when its first bytes are
   * gzip's or zstd's (the compression recorded), kubectl exited 0 and the pod's tar and compressor both exited 0,
   * aborts it otherwise and throws CacheTransferError. The archive is not checked here: it is stored as the pod made
   * it, and checked by the gate of every restore that reads it. No path existing is not an error ("nothing", the
   * writer aborted). Refuses paths under /knotless and /knotless-secrets (the secrets are still in the pod). After
   * the steps, before copyOut.
   */
  saveCache(spec: CacheSpec, writer: CacheWriter): Promise<CacheSaveOutcome>;
  /**
   * Collects one artifact: lists the pod's regular files under the patterns' fixed prefixes, matches them on the host,
   * packs exactly those and extracts them through the outputs' hostile-archive extractor into
   * `<out>/artifacts/<name>/`, with `<out>/artifacts/<name>.manifest.json` beside it. `maxBytes` bounds its content.
   * Never throws but CancelledError: a failure is the report's ("failed", with why). After copyOut.
   */
  collectArtifact(spec: ArtifactSpec, maxBytes: number): Promise<ArtifactReport>;
  /**
   * Removes the secrets from the pod, then streams /outputs back into `<out>/outputs`, refusing hostile entries. After setup. May also be called once
   * after the run was cancelled (its signal aborted), to collect what the steps wrote: it then runs under the
   * context's cleanupSignal instead.
   */
  copyOut(): Promise<ExtractReport>;
  /**
   * Stops the heartbeat and the cancel watch, then deletes the Job with background propagation unless the run
   * keeps it (a kept Job is marked so, for gc; a kept pod that got secrets has them removed first, best effort), and removes the host-side files setup
   * staged for the upload. Safe after a failed or partial setup and when called twice; deleting what is already
   * gone is not an error; never throws (it reports instead).
   */
  teardown(): Promise<TeardownReport>;
  /**
   * Instead of teardown, for a run another instance took over (or one whose owner cannot be told): ends the run's
   * presence in the cluster (heartbeat, cancel watch) and removes the host-side staged files, leaving the Job and
   * its pod untouched. Never throws. Optional: an executor without it leaves nothing to end.
   */
  leave?(): Promise<void>;
}

/** What teardownNowSync did: a sentence for stderr, the logs and result.json, and whether a Job of this run may still be there unwanted. */
export interface CrashTeardown {
  readonly detail: string;
  readonly mayBeLeft: boolean;
}

/**
 * What a runner that is going down can still ask of an executor, synchronously: an uncaught exception (the event
 * loop can no longer be trusted) or a second signal. None of them throws; each may be called at any time, before
 * setup and after teardown included.
 */
export interface ExecutorCrashPath {
  /**
   * Deletes the Job synchronously, blocking the process for up to `timeoutMs`, if this run created it, does not keep
   * it and teardown has not deleted it yet; a Job whose create was not confirmed is deleted only if it is this run's.
   * Also does what the two calls below do.
   */
  teardownNowSync(timeoutMs: number): CrashTeardown;
  /** Ends the run's presence in the cluster (the heartbeat, the cancel watch) at once, for a runner about to exit. */
  stopPresenceSync(): void;
  /** Removes the runner files staged on the host for the upload, at once, for a runner about to exit. */
  removeStagedFilesSync(): void;
}
