// The runner service's core: takes submissions, keeps the queue, starts runs within the limits, cancels, and answers what the XRPC methods and streams ask.
import { createReadStream, existsSync, lstatSync } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { CancelledError, describeError } from "../errors.js";
import type { RunEvent, RunEventSink } from "../events/run-events.js";
import { toLogLine } from "../events/sinks.js";
import type { ExecutorContext, ExecutorTimings } from "../executor/context.js";
import type { Executor } from "../executor/executor.js";
import type { Cluster } from "../cluster/cluster.js";
import type { RunResult } from "../result/run-result.js";
import type { RunSettings } from "../run/run-workflow.js";
import { EventHub } from "./event-hub.js";
import { hideHostPaths } from "./hide-host-paths.js";
import type { GitCheckoutSpec } from "../run/git-checkout.js";
import { XrpcError } from "./http-errors.js";
import { LogFeed, type LogSubscriber } from "./log-feed.js";
import { checkSubmissionSize, prepareSubmission, readSubmittedRunId, type RunDefaults, type SubmissionLimits, type SubmitRunInput } from "./prepare-submission.js";
import { pickRunsToStart, type SchedulerLimits } from "./run-scheduler.js";
import { FINAL_STATUSES, type RunStore, type ServeRunStatus, type StatusEvent, type StoredRun } from "./run-store.js";
import { superviseRun, type SupervisedRun } from "./run-supervisor.js";

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
  readonly cluster: Cluster;
  readonly timings?: Partial<ExecutorTimings>;
  /** The executor of each run: the Kubernetes one unless a test scripts its own. */
  readonly createExecutor?: (ctx: ExecutorContext) => Executor;
  readonly observer?: RunObserver;
  /** Where the service's own messages go (a log file that could not be written, a run that failed on a bug). */
  readonly warn: (message: string) => void;
}

/** A run as getRun and listRuns answer it (the lexicon's dev.knotless.runner.defs#runView). */
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
}

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
  readonly #pending = new Map<string, PendingRun>();
  readonly #running = new Map<string, RunningRun>();
  readonly #feeds = new Map<string, LogFeed>();
  readonly #hub = new EventHub();
  readonly #idle = new Set<() => void>();
  #draining = false;

  /**
   * Opens the service on its store. Runs a previous process left pending or running cannot be resumed yet (their
   * secrets were only in that process's memory): each is recorded as failed and interrupted, saying what was true of
   * it (a pending run never had a Job; a running one may have left its Job, which gc removes once its heartbeat is stale).
   */
  constructor(options: RunServiceOptions) {
    this.#options = options;
    this.#store = options.store;
    const at = new Date().toISOString();
    for (const run of this.#store.listByStatus("running")) {
      this.#store.markInterrupted(run.runId, at, `the service stopped while the run was running: its Job ${run.jobName}, if one is left, is deleted by gc once its heartbeat is stale`);
    }
    for (const run of this.#store.listByStatus("pending")) this.#store.markInterrupted(run.runId, at, "the service stopped before the run started: it never had a Job");
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
   * (503), when the queue is full (429), over the size limits (413), and for a bad workflow or request (400), in
   * which cases nothing is recorded and no cluster is called.
   */
  async submit(input: SubmitRunInput): Promise<{ runId: string; status: ServeRunStatus }> {
    const runId = readSubmittedRunId(input.runId);
    const existing = this.#store.getRun(runId);
    // A run the service's stop ended did not end by its own verdict: its old `failed` would be a stale answer to a retry.
    if (existing?.interrupted) throw new XrpcError(409, "RunInterrupted", `run ${runId} ended when the service stopped (${existing.reason ?? "it was not over"}): submit it again under a new runId`);
    if (existing) return { runId, status: existing.status };
    // Files without a record (a lost or reset database, a prune half done) are never overwritten by a new run.
    if (existsSync(join(this.#options.stateDir, "runs", runId))) {
      throw new XrpcError(409, "RunIdTaken", `run id ${runId} is taken: runs/${runId} exists in the state directory without a record; submit under another runId, or the operator moves that directory aside`);
    }
    if (this.#draining) throw new XrpcError(503, "ShuttingDown", "the service is shutting down and takes no new runs");
    checkSubmissionSize(input, this.#options.limits);
    if (this.#pending.size >= this.#options.limits.maxQueued) throw new XrpcError(429, "QueueFull", `${this.#pending.size} runs are waiting already, the most this service queues; submit again later`);
    const prepared = await prepareSubmission(input, runId, this.#options.stateDir, this.#options.defaults);
    if (this.#draining) throw new XrpcError(503, "ShuttingDown", "the service is shutting down and takes no new runs");
    const now = new Date().toISOString();
    const { run, created, event } = this.#store.insertRun(
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
    );
    if (!created) return { runId, status: run.status }; // the same id, submitted twice at once: the first one won
    if (prepared.kind === "skipped") {
      const { mkdir } = await import("node:fs/promises");
      const { writeResultFile } = await import("../result/result-file.js");
      await mkdir(prepared.outDir, { recursive: true });
      await writeResultFile(join(prepared.outDir, "result.json"), prepared.result);
    } else {
      this.#pending.set(runId, { settings: prepared.settings, repo: prepared.repo, ...(prepared.git ? { git: prepared.git } : {}), warnings: prepared.warnings });
      this.#feeds.set(runId, new LogFeed());
    }
    this.#hub.publish(event!);
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
  async listRuns(options: { readonly status?: ServeRunStatus; readonly limit?: number; readonly cursor?: string }): Promise<{ runs: RunView[]; cursor?: string }> {
    const limit = options.limit ?? 50;
    const beforeSeq = options.cursor === undefined ? undefined : Number(options.cursor);
    if (beforeSeq !== undefined && !Number.isSafeInteger(beforeSeq)) throw new XrpcError(400, "InvalidRequest", `cursor ${JSON.stringify(options.cursor)} is not one this service gave`);
    const rows = this.#store.listRuns({ limit, ...(options.status ? { status: options.status } : {}), ...(beforeSeq !== undefined ? { beforeSeq } : {}) });
    const runs = await Promise.all(rows.map((row) => this.#view(row, false)));
    return { runs, ...(rows.length === limit ? { cursor: String(rows.at(-1)!.seq) } : {}) };
  }

  /** Cancels: a pending run is recorded cancelled and never starts; a running one is stopped as `cancel` stops it. Idempotent. */
  cancel(runId: string, by: string): { runId: string; status: ServeRunStatus } {
    const run = this.#requireRun(runId);
    if (this.#pending.has(runId)) {
      const event = this.#store.setStatus(runId, "cancelled", new Date().toISOString(), `cancelled by ${by} before it started`);
      this.#pending.delete(runId);
      this.#endFeed(runId);
      if (event) this.#hub.publish(event);
      this.#notifyIfIdle();
      return { runId, status: "cancelled" };
    }
    const running = this.#running.get(runId);
    if (running && !running.supervised.controller.signal.aborted) {
      this.#store.recordCancelRequest(runId, new Date().toISOString()); // recorded before the run is told
      running.supervised.controller.abort(new CancelledError(`cancelled by ${by}`));
    }
    return { runId, status: this.#store.getRun(runId)?.status ?? run.status };
  }

  /** The run's /outputs (or one artifact's files) as a tar stream, once the run is over. */
  async outputs(runId: string, artifact?: string): Promise<Readable> {
    const run = this.#requireRun(runId);
    if (!FINAL_STATUSES.has(run.status)) throw new XrpcError(400, "RunNotFinished", `run ${runId} is ${run.status}; its outputs are there once it is over`);
    let dir = join(run.outDir, "outputs");
    let prefix = "outputs";
    if (artifact !== undefined) {
      dir = join(run.outDir, "artifacts", artifact);
      prefix = artifact;
      // Decided before the 200: a file beside the artifacts (a manifest) or a missing name would cut the tar mid-answer.
      if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(artifact) || !isDirectory(dir)) throw new XrpcError(400, "ArtifactNotFound", `run ${runId} has no artifact ${JSON.stringify(artifact)}`);
    }
    const { packTrees } = await import("../transfer/pack-tree.js");
    return packTrees(existsSync(dir) ? [{ hostDir: dir, archivePrefix: prefix }] : []).stream;
  }

  /**
   * Follows a run's log: every line from the first, live while the run goes on, then the end. Lines of a run that is
   * over come from its log.ndjson. Returns the unsubscribe.
   */
  followLogs(runId: string, subscriber: LogSubscriber): () => void {
    const run = this.#requireRun(runId);
    const feed = this.#feeds.get(runId);
    if (feed) return feed.subscribe(subscriber);
    let stopped = false;
    const path = join(run.outDir, "log.ndjson");
    void (async () => {
      if (existsSync(path)) {
        const lines = createInterface({ input: createReadStream(path, "utf8"), crlfDelay: Infinity });
        for await (const line of lines) {
          if (stopped) break;
          if (line !== "") subscriber.line(line);
        }
        lines.close();
      }
      if (!stopped) subscriber.end();
    })().catch((error: unknown) => {
      this.#options.warn(`reading ${path}: ${describeError(error)}`);
      if (!stopped) subscriber.end();
    });
    return () => {
      stopped = true;
    };
  }

  /** Every status event after `cursor` (from the store), then each new one as it is committed; returns the unsubscribe. */
  followEvents(cursor: number, listener: (event: StatusEvent) => void): () => void {
    // Synchronous from the first read to the subscription: no event can be committed in between, so none is missed or repeated.
    let last = cursor;
    for (;;) {
      const page = this.#store.listEventsAfter(last);
      if (page.length === 0) break;
      for (const event of page) listener(event);
      last = page.at(-1)!.cursor;
    }
    return this.#hub.subscribe(listener);
  }

  /**
   * Stops taking runs; cancels the pending ones; lets the running ones finish for `timeoutMs`, then cancels them (or
   * at once when `now` aborts: their clean-up skipped, straight to deleting their Jobs). Resolves once every run is over.
   */
  async drain(timeoutMs: number, now: AbortSignal): Promise<void> {
    this.#draining = true;
    for (const runId of [...this.#pending.keys()]) this.cancel(runId, "the service shutting down");
    const cancelAll = (force: boolean): void => {
      for (const [runId, { supervised }] of this.#running) {
        if (!supervised.controller.signal.aborted) {
          this.#store.recordCancelRequest(runId, new Date().toISOString());
          supervised.controller.abort(new CancelledError("cancelled: the service is shutting down"));
        }
        if (force) supervised.force.abort();
      }
    };
    const timer = setTimeout(() => cancelAll(false), timeoutMs);
    const onNow = (): void => cancelAll(true);
    now.addEventListener("abort", onNow, { once: true });
    if (now.aborted) onNow();
    try {
      await this.whenIdle();
    } finally {
      clearTimeout(timer);
      now.removeEventListener("abort", onNow);
    }
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

  /** For a crashing service: deletes every running run's Job synchronously; returns what each teardown said. */
  teardownAllNowSync(timeoutMs: number): string[] {
    return [...this.#running.values()].map(({ supervised }) => supervised.teardownNowSync(timeoutMs).detail);
  }

  #requireRun(runId: string): StoredRun {
    const run = this.#store.getRun(runId);
    if (!run) throw new XrpcError(400, "RunNotFound", `no run ${JSON.stringify(runId)} here`);
    return run;
  }

  async #view(run: StoredRun, withResult: boolean): Promise<RunView> {
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
    };
  }

  /** Starts what the limits allow, in submission order. */
  #pump(): void {
    if (this.#draining) return;
    const pending = [...this.#pending].map(([runId, run]) => ({ runId, repo: run.repo }));
    const running = [...this.#running].map(([runId, run]) => ({ runId, repo: run.repo }));
    for (const { runId } of pickRunsToStart(pending, running, this.#options.limits)) this.#start(runId);
  }

  #start(runId: string): void {
    const pending = this.#pending.get(runId)!;
    this.#pending.delete(runId);
    // Recorded first: a run is running in the database before its first cluster call.
    const event = this.#store.setStatus(runId, "running", new Date().toISOString());
    if (!event) return;
    this.#hub.publish(event);
    const feed = this.#feeds.get(runId);
    const feedSink: RunEventSink = (runEvent) => {
      const line = toLogLine(runEvent);
      if (line !== undefined) feed?.push(JSON.stringify(line));
    };
    const supervised = superviseRun({
      settings: pending.settings,
      cluster: this.#options.cluster,
      ...(this.#options.timings ? { timings: this.#options.timings } : {}),
      sinks: [feedSink, (runEvent) => this.#recordProgress(runId, runEvent), ...(this.#options.observer ? [this.#options.observer.runSink(runId)] : [])],
      ...(this.#options.createExecutor ? { createExecutor: this.#options.createExecutor } : {}),
      ...(pending.git && this.#options.defaults.git ? { git: { spec: pending.git, setting: this.#options.defaults.git } } : {}),
      warnings: pending.warnings,
      warn: this.#options.warn,
    });
    this.#running.set(runId, { supervised, repo: pending.repo });
    supervised.done.then(
      (result) => this.#finish(runId, result.status, result.finishedAt, result.error ?? undefined, result),
      (error: unknown) => {
        this.#options.warn(`run ${runId} failed on an internal error: ${describeError(error)}`);
        this.#finish(runId, "failed", new Date().toISOString(), "internal error (see the service's log)");
      },
    );
  }

  #finish(runId: string, status: ServeRunStatus, at: string, reason: string | undefined, result?: RunResult): void {
    const event = this.#store.setStatus(runId, status, at, reason);
    this.#running.delete(runId);
    this.#endFeed(runId);
    if (event) this.#hub.publish(event);
    if (result) this.#options.observer?.runEnded(result);
    this.#pump();
    this.#notifyIfIdle();
  }

  /** Sinks are called before the event's action goes on: a step is recorded as started before its exec. */
  #recordProgress(runId: string, event: RunEvent): void {
    if (event.kind === "pod-ready") this.#store.recordProgress(runId, { pod: event.pod });
    else if (event.kind === "step-start") this.#store.recordProgress(runId, { step: event.index });
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

function isDirectory(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}
