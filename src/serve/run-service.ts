// The runner service's core: takes submissions, keeps the queue, starts runs within the limits, cancels, and answers what the XRPC methods and streams ask.
import { existsSync, lstatSync, unlinkSync, writeFileSync } from "node:fs";
import { mkdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { CancelledError, RunTakenOverError, describeError } from "../core/errors.js";
import type { RunFence } from "../run/run-fence.js";
import type { RunEvent, RunEventInput, RunEventSink } from "../events/run-events.js";
import type { ExecutorContext, ExecutorTimings } from "../executor/kubernetes/context.js";
import type { Executor } from "../executor/executor.js";
import type { RunCluster } from "../cluster/cluster.js";
import type { RunResult } from "../run/run-result.js";
import type { RunSettings } from "../executor/kubernetes/context.js";
import { EventHub } from "./event-hub.js";
import { hideHostPaths } from "./hide-host-paths.js";
import type { GitCheckoutSpec } from "../transfer/git-checkout.js";
import {
  QUEUE_FULL_RETRY_AFTER_SECONDS,
  SHUTTING_DOWN_RETRY_AFTER_SECONDS,
  STATE_UNWRITABLE_RETRY_AFTER_SECONDS,
  XrpcError,
} from "./http-errors.js";
import { isDiskFullError } from "../core/disk-full.js";
import { followLogFile } from "./follow-log-file.js";
import type { FollowerOutput } from "./follower-output.js";
import { LogFeed } from "./log-feed.js";
import {
  checkSubmissionSize,
  prepareSubmission,
  readSubmittedRunId,
  type RunDefaults,
  type SubmissionLimits,
  type SubmitRunInput,
} from "./prepare-submission.js";
import { pickRunsToStart, type SchedulerLimits } from "./run-scheduler.js";
import { FINAL_STATUSES, type RunStore, type ServeRunStatus, type StatusEvent, type StoredRun } from "./run-store.js";
import { superviseRun, type SupervisedRun, type SuperviseOptions } from "../run/supervise-run.js";
import { readRunPlan, serializeRunPlan, settingsFromPlan, type RunPlan } from "../run/run-plan.js";
import { buildOwnershipAnnotations, type RunContinuation } from "./run-ownership.js";
import { readRunCheckpoint, type RunCheckpoint } from "../run/run-checkpoint.js";
import { writeResultFile } from "../run/result-file.js";
import { packTrees } from "../transfer/pack-tree.js";

/** What the service tells its metrics. */
export interface RunObserver {
  /** A sink for one run's events (phase durations, pod waits, bytes moved). */
  runSink(runId: string): RunEventSink;
  runEnded(result: RunResult): void;
}

export interface RunServiceOptions {
  readonly stateDir: string;
  readonly store: RunStore;
  readonly defaults: RunDefaults;
  readonly limits: SchedulerLimits & SubmissionLimits & { readonly maxQueued: number };
  readonly cluster: RunCluster;
  /** Ties a run's work to its log, so that the shared cluster's calls are recorded in the run's run.log. */
  readonly withClusterCalls?: <T>(emit: (event: RunEventInput) => void, work: () => Promise<T>) => Promise<T>;
  readonly timings?: Partial<ExecutorTimings>;
  /** The executor of each run: the Kubernetes one unless a test scripts its own. */
  readonly createExecutor?: (ctx: ExecutorContext) => Executor;
  readonly observer?: RunObserver;
  /** Where the service's own messages go (a log file that could not be written, a run that failed on a bug). */
  readonly warn: (message: string) => void;
  /**
   * This service's `--instance`: its runs' Jobs are annotated as its own, with what another instance needs to adopt
   * them (src/serve/run-ownership.ts). Absent: no annotation (a service without a Lease).
   */
  readonly instance?: string;
  /**
   * The fence of each run this service drives (src/serve/run-fence.ts: its Job's owner read while the Lease is not
   * held), made when the run starts, re-attaches or is adopted. Absent: none (a service without a Lease).
   */
  readonly fence?: (run: {
    readonly runId: string;
    readonly jobName: string;
    readonly namespace: string | undefined;
  }) => RunFence;
}

/** A run as getRun and listRuns answer it (the lexicon's dev.knotless.runner.defs#runView). */
/** A run the drain gave up waiting for: its Job was deleted synchronously, and what that said. */
export interface AbandonedRun {
  readonly runId: string;
  readonly detail: string;
  /** True when the Job may still be in the cluster (the delete failed or could not be confirmed). */
  readonly mayBeLeft: boolean;
}

export interface RunView {
  readonly runId: string;
  readonly status: ServeRunStatus;
  readonly createdAt: string;
  readonly startedAt?: string;
  readonly finishedAt?: string;
  readonly workflow?: string;
  readonly repo?: string;
  readonly reason?: string;
  readonly result?: unknown;
  /** The `--instance` that answers for the run: this service's, or the one that adopted it while this one was away. */
  readonly instance?: string;
  /** The instance this service adopted the run from. */
  readonly adoptedFrom?: string;
}

/** Most events read from the store at once for an /events follower. */
const EVENTS_PAGE = 100;
/** Most bytes of events sent to one follower at once. */
const EVENTS_ROOM = 64 * 1024;

interface PendingRun {
  /** The run's settings, secrets included: held only here, in memory, until the run starts. */
  readonly settings: RunSettings;
  readonly repo: string | null;
  /** The commit to clone into settings.checkoutDir when the run starts. */
  readonly git?: GitCheckoutSpec;
  /** The workflow's warnings, logged as the run starts. */
  readonly warnings: readonly string[];
}

interface RunningRun {
  readonly supervised: SupervisedRun;
  readonly repo: string | null;
}

export class RunService {
  readonly #options: RunServiceOptions;
  readonly #store: RunStore;
  /** In submission order (a Map keeps insertion order): the queue. */
  #pending = new Map<string, PendingRun>();
  readonly #running = new Map<string, RunningRun>();
  readonly #feeds = new Map<string, LogFeed>();
  readonly #hub = new EventHub();
  readonly #idle = new Set<() => void>();
  #draining = false;
  /** Why the state directory cannot be written (its disk full), until a probe write succeeds again. */
  #unwritable: string | undefined;
  /** Final statuses the store could not take (its disk full), written once it can. */
  readonly #unrecorded = new Map<
    string,
    { readonly status: ServeRunStatus; readonly at: string; readonly reason: string | undefined }
  >();

  /**
   * Opens the service on its store. A run a previous process left running is re-attached to (its Job and pod found
   * again, its secrets read back from the pod, its step followed on from its checkpoint: reattach) when it has a
   * plan; one without (written by an older runner) is recorded as failed and interrupted, its Job left to gc. A
   * pending run never had a Job, and its secrets were only in that process's memory: failed and interrupted too.
   */
  constructor(options: RunServiceOptions) {
    this.#options = options;
    this.#store = options.store;
    const at = new Date().toISOString();
    for (const run of this.#store.listByStatus("running")) {
      if (run.plan !== null) continue; // re-attached by resumeRunning
      this.#store.markInterrupted(
        run.runId,
        at,
        `the service stopped while the run was running: its Job ${run.jobName}, if one is left, is deleted by gc once its heartbeat is stale`,
      );
    }
    for (const run of this.#store.listByStatus("pending"))
      this.#store.markInterrupted(run.runId, at, "the service stopped before the run started: it never had a Job");
  }

  /**
   * Re-attaches to every run a previous process left running with a plan (the service's start calls it once);
   * returns their ids. A plan or checkpoint that cannot be read ends its run failed (runner-lost) at once.
   */
  resumeRunning(): string[] {
    const resumed: string[] = [];
    for (const run of this.#store.listByStatus("running")) {
      if (run.plan === null || this.#running.has(run.runId)) continue;
      let plan: RunPlan;
      let checkpoint: RunCheckpoint | undefined;
      try {
        plan = readRunPlan(run.plan);
        checkpoint = run.checkpoint === null ? undefined : readRunCheckpoint(run.checkpoint);
      } catch (error) {
        this.#finish(run.runId, "failed", new Date().toISOString(), `runner-lost: ${describeError(error)}`);
        continue;
      }
      this.reattach(run.runId, { plan, ...(checkpoint ? { checkpoint } : {}) });
      resumed.push(run.runId);
    }
    return resumed;
  }

  /**
   * Continues a run that is `running` in the store but not in this process (a restart's, or one an adopter claimed
   * and recorded): through the one launch path, its executor attaching to the run's Job instead of creating one. Its
   * log files are cut to the checkpoint's lengths (started empty without one). A cancel asked for before the stop
   * is finished. The end is recorded as for any run.
   */
  reattach(runId: string, source: { readonly plan: RunPlan; readonly checkpoint?: RunCheckpoint }): void {
    const stored = this.#requireRun(runId);
    if (this.#running.has(runId)) return;
    const feed = new LogFeed();
    if (source.checkpoint) feed.written(source.checkpoint.logs.ndjson);
    this.#feeds.set(runId, feed);
    const { hostTar, git } = this.#options.defaults;
    const settings = settingsFromPlan(source.plan, [], { ...(hostTar ? { hostTar } : {}), ...(git ? { git } : {}) });
    const supervised = this.#supervise(runId, settings, {
      resume: { checkpoint: source.checkpoint, secretNames: source.plan.secretNames },
    });
    this.#running.set(runId, { supervised, repo: stored.repo });
    if (stored.cancelRequestedAt !== null)
      supervised.controller.abort(new CancelledError("cancelled: asked for before the service stopped"));
  }

  get draining(): boolean {
    return this.#draining;
  }

  get queueLength(): number {
    return this.#pending.size;
  }

  get runningCount(): number {
    return this.#running.size;
  }

  /**
   * Queues a run, or returns the run of that id when there is one (nothing else happens). Refuses while draining
   * (503 ShuttingDown), while the state directory cannot be written (503 StateUnwritable), when the queue is full
   * (429), over the size limits (413), and for a bad workflow or request (400), in which cases nothing is recorded
   * and no cluster is called. The 503s and the 429 carry Retry-After.
   */
  async submit(input: SubmitRunInput): Promise<{ runId: string; status: ServeRunStatus }> {
    const runId = readSubmittedRunId(input.runId);
    const existing = this.#store.getRun(runId);
    // A run the service's stop ended did not end by its own verdict: its old `failed` would be a stale answer to a retry.
    if (existing?.interrupted)
      throw new XrpcError(
        409,
        "RunInterrupted",
        `run ${runId} ended when the service stopped (${existing.reason ?? "it was not over"}): submit it again under a new runId`,
      );
    if (existing) return { runId, status: existing.status };
    // Files without a record (a lost or reset database, a prune half done) are never overwritten by a new run.
    if (existsSync(join(this.#options.stateDir, "runs", runId))) {
      throw new XrpcError(
        409,
        "RunIdTaken",
        `run id ${runId} is taken: runs/${runId} exists in the state directory without a record; submit under another runId, or the operator moves that directory aside`,
      );
    }
    if (this.#draining)
      throw new XrpcError(
        503,
        "ShuttingDown",
        "the service is shutting down and takes no new runs",
        SHUTTING_DOWN_RETRY_AFTER_SECONDS,
      );
    checkSubmissionSize(input, this.#options.limits);
    if (this.#pending.size >= this.#options.limits.maxQueued)
      throw new XrpcError(
        429,
        "QueueFull",
        `${this.#pending.size} runs are waiting already, the most this service queues; submit again later`,
        QUEUE_FULL_RETRY_AFTER_SECONDS,
      );
    if (!this.#checkStateWritable()) throw unwritableError();
    const prepared = await prepareSubmission(input, runId, this.#options.stateDir, this.#options.defaults);
    if (this.#draining)
      throw new XrpcError(
        503,
        "ShuttingDown",
        "the service is shutting down and takes no new runs",
        SHUTTING_DOWN_RETRY_AFTER_SECONDS,
      );
    const now = new Date().toISOString();
    const { run, created } = this.#writeState(() =>
      this.#store.insertRun(
        {
          runId,
          status: prepared.kind === "skipped" ? "skipped" : "pending",
          repo: prepared.repo,
          workflow: prepared.workflowName,
          jobName: prepared.jobName,
          target: JSON.stringify(this.#options.defaults.target),
          outDir: prepared.outDir,
          request: prepared.storedRequest,
          hasSecrets: prepared.hasSecrets,
          ...(prepared.kind === "skipped" ? { reason: prepared.reason } : {}),
        },
        now,
      ),
    );
    if (!created) return { runId, status: run.status }; // the same id, submitted twice at once: the first one won
    if (prepared.kind === "skipped") {
      try {
        await mkdir(prepared.outDir, { recursive: true });
        await writeResultFile(join(prepared.outDir, "result.json"), prepared.result);
      } catch (error) {
        // Recorded as skipped already: the answer stands, without its result.json.
        if (!isDiskFullError(error)) throw error;
        this.#noteUnwritable(error);
      }
    } else {
      this.#pending.set(runId, {
        settings: prepared.settings,
        repo: prepared.repo,
        ...(prepared.git ? { git: prepared.git } : {}),
        warnings: prepared.warnings,
      });
      this.#feeds.set(runId, new LogFeed());
    }
    this.#hub.publish();
    this.#pump();
    return { runId, status: this.#store.getRun(runId)!.status };
  }

  /** Throws XrpcError 400 RunNotFound for an id the service does not know. */
  assertKnownRun(runId: string): void {
    this.#requireRun(runId);
  }

  async getRun(runId: string): Promise<RunView> {
    return this.#view(this.#requireRun(runId), true);
  }

  /** Runs newest first; `cursor` is the last page's, opaque to clients. */
  async listRuns(options: {
    readonly status?: ServeRunStatus;
    readonly limit?: number;
    readonly cursor?: string;
  }): Promise<{ runs: RunView[]; cursor?: string }> {
    const limit = options.limit ?? 50;
    const beforeSeq = options.cursor === undefined ? undefined : Number(options.cursor);
    if (beforeSeq !== undefined && !Number.isSafeInteger(beforeSeq))
      throw new XrpcError(
        400,
        "InvalidRequest",
        `cursor ${JSON.stringify(options.cursor)} is not one this service gave`,
      );
    const rows = this.#store.listRuns({
      limit,
      ...(options.status ? { status: options.status } : {}),
      ...(beforeSeq !== undefined ? { beforeSeq } : {}),
    });
    const runs = await Promise.all(rows.map((row) => this.#view(row, false)));
    return { runs, ...(rows.length === limit ? { cursor: String(rows.at(-1)!.seq) } : {}) };
  }

  /** Cancels: a pending run is recorded cancelled and never starts; a running one is stopped as `cancel` stops it. Idempotent. */
  cancel(runId: string, by: string): { runId: string; status: ServeRunStatus } {
    const run = this.#requireRun(runId);
    if (this.#pending.has(runId)) {
      const event = this.#store.setStatus(
        runId,
        "cancelled",
        new Date().toISOString(),
        `cancelled by ${by} before it started`,
      );
      this.#pending.delete(runId);
      this.#endFeed(runId);
      if (event) this.#hub.publish();
      this.#notifyIfIdle();
      return { runId, status: "cancelled" };
    }
    const running = this.#running.get(runId);
    if (running && !running.supervised.controller.signal.aborted) {
      this.#recordCancelRequest(runId); // recorded before the run is told
      running.supervised.controller.abort(new CancelledError(`cancelled by ${by}`));
    }
    return { runId, status: this.#unrecorded.get(runId)?.status ?? this.#store.getRun(runId)?.status ?? run.status };
  }

  /** The run's /outputs (or one artifact's files) as a tar stream, once the run is over. */
  async outputs(runId: string, artifact?: string): Promise<Readable> {
    const run = this.#requireRun(runId);
    if (!FINAL_STATUSES.has(run.status))
      throw new XrpcError(
        400,
        "RunNotFinished",
        `run ${runId} is ${run.status}; its outputs are there once it is over`,
      );
    let dir = join(run.outDir, "outputs");
    let prefix = "outputs";
    if (artifact !== undefined) {
      dir = join(run.outDir, "artifacts", artifact);
      prefix = artifact;
      // Decided before the 200: a file beside the artifacts (a manifest) or a missing name would cut the tar mid-answer.
      if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(artifact) || !isDirectory(dir))
        throw new XrpcError(400, "ArtifactNotFound", `run ${runId} has no artifact ${JSON.stringify(artifact)}`);
    }
    return packTrees(existsSync(dir) ? [{ hostDir: dir, archivePrefix: prefix }] : []).stream;
  }

  /**
   * Follows a run's log: every line of its log.ndjson from the first, live while the run goes on (read from the file
   * as its sink writes it), then the end; resolves once the follower has been handed the last line, or is gone.
   */
  followLogs(runId: string, output: FollowerOutput): Promise<void> {
    const run = this.#requireRun(runId);
    return followLogFile(join(run.outDir, "log.ndjson"), this.#feeds.get(runId), output);
  }

  /**
   * Throws XrpcError 400 for a cursor /events cannot follow: EpochMismatch when `epoch` is given and is not this
   * database's (the cursor is from a state since reset), FutureCursor past the latest committed cursor.
   */
  checkEventsCursor(cursor: number, epoch: string | undefined): void {
    const current = this.#store.epoch();
    if (epoch !== undefined && epoch !== current)
      throw new XrpcError(
        400,
        "EpochMismatch",
        `cursor ${cursor} is from epoch ${JSON.stringify(epoch)}; this service's events are epoch ${JSON.stringify(current)} (its state was reset): follow again from cursor 0`,
      );
    const latest = this.#store.lastCursor();
    if (cursor > latest)
      throw new XrpcError(
        400,
        "FutureCursor",
        `cursor ${cursor} is past the latest event (${latest}) of epoch ${JSON.stringify(current)}: it is from another state, or made up; follow from 0, or from a cursor this service sent`,
      );
  }

  /**
   * Every status event after `cursor` (read from the store page by page, as fast as the follower takes them), then
   * each new one as it is committed, each frame with this database's epoch; resolves only once the follower is gone.
   */
  async followEvents(cursor: number, output: FollowerOutput): Promise<void> {
    const epoch = this.#store.epoch();
    let last = cursor;
    while (!output.signal.aborted) {
      // Synchronous from the read to the wait: no event can be committed in between, so none is missed or repeated.
      const page = this.#store.listEventsAfter(last, EVENTS_PAGE);
      if (page.length === 0) {
        await this.#hub.whenPublished(output.signal);
        continue;
      }
      const room = await output.room(EVENTS_ROOM);
      if (room === 0) return;
      const lines: Buffer[] = [];
      let bytes = 0;
      for (const event of page) {
        const line = Buffer.from(`${JSON.stringify({ ...event, epoch })}\n`);
        if (lines.length > 0 && bytes + line.length > room) break;
        lines.push(line);
        bytes += line.length;
        last = event.cursor;
      }
      output.send(Buffer.concat(lines, bytes));
    }
  }

  /**
   * Stops taking runs; cancels the pending ones; lets the running ones finish for `timeoutMs`, then cancels them (or
   * at once when `now` aborts: their clean-up skipped, straight to deleting their Jobs). Cancelled runs then have
   * `cleanupTimeoutMs` to end (their Jobs deleted); a run still not over by then is abandoned: its Job deleted
   * synchronously as a crashing service does, and named in the answer with what that delete said. Resolves once
   * every run is over or abandoned, so the whole drain lasts at most `timeoutMs + cleanupTimeoutMs` (and the deletes).
   */
  async drain(
    timeoutMs: number,
    now: AbortSignal,
    cleanupTimeoutMs: number,
    deleteTimeoutMs = 10_000,
  ): Promise<AbandonedRun[]> {
    this.#draining = true;
    for (const runId of [...this.#pending.keys()]) this.cancel(runId, "the service shutting down");
    let giveUp: NodeJS.Timeout | undefined;
    let gaveUp!: () => void;
    const givenUp = new Promise<"gave-up">((resolve) => (gaveUp = () => resolve("gave-up")));
    const cancelAll = (force: boolean): void => {
      for (const [runId, { supervised }] of this.#running) {
        if (!supervised.controller.signal.aborted) {
          this.#store.recordCancelRequest(runId, new Date().toISOString());
          supervised.controller.abort(new CancelledError("cancelled: the service is shutting down"));
        }
        if (force) supervised.force.abort();
      }
      giveUp ??= setTimeout(gaveUp, cleanupTimeoutMs);
    };
    const timer = setTimeout(() => cancelAll(false), timeoutMs);
    const onNow = (): void => cancelAll(true);
    now.addEventListener("abort", onNow, { once: true });
    if (now.aborted) onNow();
    try {
      if ((await Promise.race([this.whenIdle(), givenUp])) !== "gave-up") return [];
      return this.abandonAllNowSync(
        `its clean-up did not end within ${Math.round(cleanupTimeoutMs / 1000)}s of the shutdown's cancel`,
        deleteTimeoutMs,
      );
    } finally {
      clearTimeout(timer);
      clearTimeout(giveUp);
      now.removeEventListener("abort", onNow);
    }
  }

  /**
   * For a service that exits now: deletes every running run's Job synchronously (as a crashing service does) and
   * records the run cancelled with `why` and what the delete said. Returns each run so abandoned.
   */
  abandonAllNowSync(why: string, deleteTimeoutMs: number): AbandonedRun[] {
    const abandoned: AbandonedRun[] = [];
    for (const [runId, { supervised }] of [...this.#running]) {
      if (!supervised.controller.signal.aborted) supervised.controller.abort(new CancelledError(`cancelled: ${why}`));
      const teardown = supervised.teardownNowSync(deleteTimeoutMs);
      const event = this.#store.setStatus(
        runId,
        "cancelled",
        new Date().toISOString(),
        `cancelled: ${why}; ${teardown.detail}`,
      );
      if (event) this.#hub.publish();
      abandoned.push({ runId, ...teardown });
    }
    return abandoned;
  }

  /** Resolves once nothing is pending or running. */
  whenIdle(): Promise<void> {
    if (this.#pending.size === 0 && this.#running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.add(resolve));
  }

  /** Deletes the records and files of runs that finished more than `keepMs` ago; returns how many. */
  async prune(keepMs: number): Promise<number> {
    const pruned = this.#store.pruneFinishedBefore(new Date(Date.now() - keepMs).toISOString());
    for (const run of pruned) await rm(run.outDir, { recursive: true, force: true });
    return pruned.length;
  }

  /**
   * For a crashing service: leaves the Job of every run the next start can re-attach to (its checkpoint names its
   * pod, so it ran, and its plan is recorded) and deletes every other running run's Job synchronously; returns what
   * was done with each.
   */
  teardownAllNowSync(timeoutMs: number): string[] {
    return [...this.#running].map(([runId, { supervised }]) => {
      const stored = this.#store.getRun(runId);
      const place = stored?.checkpoint ? (JSON.parse(stored.checkpoint) as RunCheckpoint) : undefined;
      if (stored?.plan && place?.pod) {
        supervised.leaveNowSync();
        return `left Job ${stored.jobName} of run ${runId} for the next start to re-attach to (its pod ${place.pod.name} stops itself once idle for --pod-idle-timeout)`;
      }
      return supervised.teardownNowSync(timeoutMs).detail;
    });
  }

  #requireRun(runId: string): StoredRun {
    const run = this.#store.getRun(runId);
    if (!run) throw new XrpcError(400, "RunNotFound", `no run ${JSON.stringify(runId)} here`);
    return run;
  }

  async #view(stored: StoredRun, withResult: boolean): Promise<RunView> {
    // A run that ended while the store could not take its status: its end as this process knows it.
    const unrecorded = this.#unrecorded.get(stored.runId);
    const run = unrecorded
      ? { ...stored, status: unrecorded.status, finishedAt: unrecorded.at, reason: unrecorded.reason ?? null }
      : stored;
    let result: unknown;
    if (withResult && FINAL_STATUSES.has(run.status)) {
      try {
        result = JSON.parse(await readFile(join(run.outDir, "result.json"), "utf8")) as unknown;
      } catch {
        result = undefined; // a run cancelled before it started has none
      }
    }
    // Replies name the run's files relative to the run, and never the state directory's host path.
    const hide = (value: unknown): unknown => hideHostPaths(value, run.outDir, this.#options.stateDir);
    return {
      runId: run.runId,
      status: run.status,
      createdAt: run.createdAt,
      ...(run.startedAt ? { startedAt: run.startedAt } : {}),
      ...(run.finishedAt ? { finishedAt: run.finishedAt } : {}),
      ...(run.workflow ? { workflow: run.workflow } : {}),
      ...(run.repo ? { repo: run.repo } : {}),
      ...(run.reason ? { reason: hide(run.reason) as string } : {}),
      ...(result !== undefined ? { result: hide(result) } : {}),
      ...viewOwnership(run, this.#options.instance),
    };
  }

  /** Starts what the limits allow, in submission order. */
  #pump(): void {
    if (this.#draining || !this.#checkStateWritable()) return;
    const pending = [...this.#pending].map(([runId, run]) => ({ runId, repo: run.repo }));
    const running = [...this.#running].map(([runId, run]) => ({ runId, repo: run.repo }));
    for (const { runId } of pickRunsToStart(pending, running, this.#options.limits)) {
      if (this.#unwritable !== undefined) return; // a start that could not be recorded: the rest wait with it
      this.#start(runId);
    }
  }

  /**
   * True when the state directory can be written: at once unless a write failed for want of space; then only once a
   * probe write succeeds again, when the statuses that could not be recorded meanwhile are written.
   */
  #checkStateWritable(): boolean {
    if (this.#unwritable === undefined) return true;
    const probe = join(this.#options.stateDir, ".write-probe");
    try {
      writeFileSync(probe, PROBE_BYTES);
      unlinkSync(probe);
    } catch {
      return false;
    }
    this.#unwritable = undefined;
    for (const [runId, { status, at, reason }] of this.#unrecorded) {
      let event: StatusEvent | undefined;
      try {
        event = this.#writeState(() => this.#store.setStatus(runId, status, at, reason));
      } catch (error) {
        if (error instanceof XrpcError) return false; // full again (marked so): the rest wait for the next probe
        throw error;
      }
      this.#unrecorded.delete(runId);
      if (event) this.#hub.publish();
    }
    this.#options.warn("the state directory can be written again: taking runs");
    return true;
  }

  /** Runs a write of the store; one that fails for want of space marks the state unwritable and throws 503 StateUnwritable. */
  #writeState<T>(write: () => T): T {
    try {
      return write();
    } catch (error) {
      if (!isDiskFullError(error)) throw error;
      this.#noteUnwritable(error);
      throw unwritableError();
    }
  }

  /** Records a cancel request; on a full disk the cancel goes on unrecorded (a restart then fails the run as any). */
  #recordCancelRequest(runId: string): void {
    try {
      this.#store.recordCancelRequest(runId, new Date().toISOString());
    } catch (error) {
      if (!isDiskFullError(error)) throw error;
      this.#noteUnwritable(error);
    }
  }

  #noteUnwritable(error: unknown): void {
    if (this.#unwritable === undefined)
      this.#options.warn(
        `the state directory cannot be written, refusing submits until it can: ${describeError(error)}`,
      );
    this.#unwritable = describeError(error);
  }

  #start(runId: string): void {
    const pending = this.#pending.get(runId)!;
    this.#pending.delete(runId);
    // Recorded first: a run is running in the database before its first cluster call.
    let event: StatusEvent | undefined;
    try {
      event = this.#writeState(() => {
        // Its plan first: a restart re-attaches only to a run whose plan is on record.
        this.#store.recordPlan(runId, serializeRunPlan(pending.settings));
        return this.#store.setStatus(runId, "running", new Date().toISOString());
      });
    } catch (error) {
      if (!(error instanceof XrpcError)) throw error;
      this.#pending = new Map([[runId, pending], ...this.#pending]); // back at the head of the queue
      return;
    }
    if (!event) return;
    this.#hub.publish();
    const supervised = this.#supervise(runId, this.#withOwnership(runId, pending), {
      ...(pending.git && this.#options.defaults.git
        ? { git: { spec: pending.git, setting: this.#options.defaults.git } }
        : {}),
      warnings: pending.warnings,
    });
    this.#running.set(runId, { supervised, repo: pending.repo });
  }

  /** The run's settings with this instance's ownership annotations for its Job (none without an instance). */
  #withOwnership(runId: string, pending: PendingRun): RunSettings {
    const instance = this.#options.instance;
    if (instance === undefined) return pending.settings;
    const workflow = this.#store.getRun(runId)?.workflow ?? null;
    const { annotations, tooLarge } = buildOwnershipAnnotations(instance, pending.settings, {
      repo: pending.repo,
      workflow,
    });
    if (tooLarge) this.#options.warn(`run ${runId}: ${tooLarge}`);
    return { ...pending.settings, jobAnnotations: { ...pending.settings.jobAnnotations, ...annotations } };
  }

  /**
   * Takes over a run another instance started, once this instance's adopter has claimed its Job: records it here as
   * running (under this service's own out directory, in the Job's namespace, with the instance it came from as its
   * reason), then re-attaches to it as a restart does (reattach), so getRun, /logs and /events answer for it from now
   * on. Returns false, doing nothing, when this service has a run of that id already (the claim stands: say so).
   */
  adoptRun(adoption: {
    readonly continuation: RunContinuation;
    readonly namespace: string | undefined;
    readonly from: string;
  }): boolean {
    const { plan, repo, workflow } = adoption.continuation;
    const runId = plan.settings.runId;
    if (this.#store.getRun(runId) || this.#draining) return false;
    const outDir = join(this.#options.stateDir, "runs", runId);
    const { namespaceFromContext: _context, ...target } = this.#options.defaults.target;
    const settings: RunSettings = {
      ...plan.settings,
      outDir,
      target: { ...target, ...(adoption.namespace === undefined ? {} : { namespace: adoption.namespace }) },
    };
    const adopted: RunPlan = { ...plan, settings };
    const at = new Date().toISOString();
    const reason = `adopted from instance ${adoption.from}, whose Lease expired`;
    this.#writeState(() => {
      this.#store.insertRun(
        {
          runId,
          status: "pending",
          repo,
          workflow,
          jobName: settings.jobName,
          target: JSON.stringify(settings.target),
          outDir,
          request: JSON.stringify({ adoptedFrom: adoption.from }),
          hasSecrets: plan.secretNames.length > 0,
          reason,
          adoptedFrom: adoption.from,
        },
        at,
      );
      this.#store.recordPlan(runId, serializeRunPlan(settings));
      this.#store.setStatus(runId, "running", at, reason);
    });
    this.#hub.publish();
    this.reattach(runId, { plan: adopted });
    return true;
  }

  /**
   * Records a run this service left running as adopted by another instance (its Job's owner annotation names it):
   * failed and interrupted here, saying who finishes it; its Job is left alone.
   */
  markAdoptedElsewhere(runId: string, owner: string | undefined, when = "while this service was away"): void {
    const by = owner === undefined ? "another instance" : `instance ${owner}`;
    const event = this.#store.markInterrupted(
      runId,
      new Date().toISOString(),
      `adopted by ${by} ${when}: ${by} finishes it and answers for it; its Job is left to it`,
      owner ?? "another instance",
    );
    if (event) this.#hub.publish();
  }

  /**
   * A run whose fence found it another instance's while this one's Lease had lapsed: recorded as adopted by it
   * (failed and interrupted here, answered for by that instance), its log's followers told in its last line; its
   * Job and pod were left alone, and this service never takes it back (the run is no longer running here).
   */
  #finishTakenOver(runId: string, owner: string | undefined): void {
    this.#options.warn(
      `run ${runId} was adopted by ${owner === undefined ? "another instance" : `instance ${owner}`} while this instance's Lease had lapsed: stopped driving it, its Job left to that instance`,
    );
    try {
      this.#writeState(() => this.markAdoptedElsewhere(runId, owner, "while this service's Lease had lapsed"));
    } catch (error) {
      if (!(error instanceof XrpcError)) throw error;
    }
    this.#running.delete(runId);
    this.#endFeed(runId);
    this.#pump();
    this.#notifyIfIdle();
  }

  /** Starts (or, with `resume`, continues) the run under superviseRun; its end is recorded by #finish. */
  #supervise(
    runId: string,
    settings: RunSettings,
    extra: Pick<SuperviseOptions, "git" | "warnings" | "resume">,
  ): SupervisedRun {
    const feed = this.#feeds.get(runId);
    const supervised = superviseRun({
      settings,
      cluster: this.#options.cluster,
      ...(this.#options.timings ? { timings: this.#options.timings } : {}),
      onLogWritten: (length) => feed?.written(length),
      sinks: [
        (runEvent) => this.#recordProgress(runId, runEvent),
        ...(this.#options.observer ? [this.#options.observer.runSink(runId)] : []),
      ],
      ...(this.#options.createExecutor ? { createExecutor: this.#options.createExecutor } : {}),
      ...extra,
      checkpoints: {
        save: (checkpoint) => {
          try {
            this.#store.saveCheckpoint(runId, JSON.stringify(checkpoint));
          } catch (error) {
            if (isDiskFullError(error)) this.#noteUnwritable(error);
            throw error;
          }
        },
      },
      warn: this.#options.warn,
      ...(this.#options.withClusterCalls ? { withClusterCalls: this.#options.withClusterCalls } : {}),
      ...(this.#options.fence
        ? {
            fence: this.#options.fence({ runId, jobName: settings.jobName, namespace: settings.target.namespace }),
          }
        : {}),
    });
    supervised.done.then(
      (result) => this.#finish(runId, result.status, result.finishedAt, result.error ?? undefined, result),
      (error: unknown) => {
        if (error instanceof RunTakenOverError) {
          this.#finishTakenOver(runId, error.owner);
          return;
        }
        if (isDiskFullError(error)) {
          this.#noteUnwritable(error);
          this.#finish(
            runId,
            "failed",
            new Date().toISOString(),
            "the runner's disk is full: no space left to write result.json",
          );
          return;
        }
        this.#options.warn(`run ${runId} failed on an internal error: ${describeError(error)}`);
        this.#finish(runId, "failed", new Date().toISOString(), "internal error (see the service's log)");
      },
    );
    return supervised;
  }

  #finish(runId: string, status: ServeRunStatus, at: string, reason: string | undefined, result?: RunResult): void {
    let event: StatusEvent | undefined;
    try {
      event = this.#writeState(() => this.#store.setStatus(runId, status, at, reason));
    } catch (error) {
      if (!(error instanceof XrpcError)) throw error;
      this.#unrecorded.set(runId, { status, at, reason }); // written once the disk has room again
    }
    this.#running.delete(runId);
    this.#endFeed(runId);
    if (event) this.#hub.publish();
    if (result) this.#options.observer?.runEnded(result);
    this.#pump();
    this.#notifyIfIdle();
  }

  /** Sinks are called before the event's action goes on: a step is recorded as started before its exec. */
  #recordProgress(runId: string, event: RunEvent): void {
    try {
      if (event.kind === "pod-ready") this.#store.recordProgress(runId, { pod: event.pod });
      else if (event.kind === "step-start") this.#store.recordProgress(runId, { step: event.index });
    } catch (error) {
      // Progress is for a restart's re-attach; the run itself stops on its own log files' failure.
      if (!isDiskFullError(error)) throw error;
      this.#noteUnwritable(error);
    }
  }

  #endFeed(runId: string): void {
    this.#feeds.get(runId)?.end();
    this.#feeds.delete(runId);
  }

  #notifyIfIdle(): void {
    if (this.#pending.size > 0 || this.#running.size > 0) return;
    for (const resolve of this.#idle) resolve();
    this.#idle.clear();
  }
}

/** What a probe of the state directory writes: room for a few rows and pages, so a nearly full disk is not taken for one with space. */
const PROBE_BYTES = Buffer.alloc(64 * 1024);

function unwritableError(): XrpcError {
  return new XrpcError(
    503,
    "StateUnwritable",
    "the service cannot write its state directory (no space left on its disk); submit again once space is freed",
    STATE_UNWRITABLE_RETRY_AFTER_SECONDS,
  );
}

function isDirectory(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Who answers for a run: the adopter that took it from this service, else this service's own `--instance`. */
function viewOwnership(
  run: Pick<StoredRun, "adoptedBy" | "adoptedFrom">,
  instance: string | undefined,
): Pick<RunView, "instance" | "adoptedFrom"> {
  const owner = run.adoptedBy ?? instance;
  return {
    ...(owner !== undefined ? { instance: owner } : {}),
    ...(run.adoptedFrom !== null ? { adoptedFrom: run.adoptedFrom } : {}),
  };
}
