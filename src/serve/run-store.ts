// The service's state in SQLite (WAL): one row per run, and every status change as an event row with an increasing cursor, written before the change is acted on.
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { StateError } from "../core/errors.js";
import { openStateDatabase } from "./open-state-database.js";

/** Tangled's pipeline status words, plus skipped. */
export type ServeRunStatus = "pending" | "running" | "success" | "failed" | "timeout" | "cancelled" | "skipped";
export const FINAL_STATUSES: ReadonlySet<ServeRunStatus> = new Set([
  "success",
  "failed",
  "timeout",
  "cancelled",
  "skipped",
]);

/**
 * One run as the database keeps it. What a restarted service needs to re-attach to or clean up each run's Job is
 * here: the Job's name and namespace (`target`, without secrets), the run's out directory, and the request it came
 * from minus its secrets (`request`), with `hasSecrets` saying that a re-run would need secrets the database never held.
 */
export interface StoredRun {
  /** Submission order: the queue's order. */
  readonly seq: number;
  readonly runId: string;
  readonly status: ServeRunStatus;
  readonly repo: string | null;
  readonly workflow: string | null;
  readonly jobName: string;
  /** The cluster target (namespace, context, kubeconfig path) as JSON. */
  readonly target: string;
  readonly outDir: string;
  /** The submitRun input as JSON, its secrets' values removed. */
  readonly request: string;
  readonly hasSecrets: boolean;
  readonly createdAt: string;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  /** Why the run has its status, when there is a word to say (skipped, cancelled, an internal failure). */
  readonly reason: string | null;
  /** When a cancel of the running run was asked for (recorded before the run is told): a restarted service finishes the cancel. */
  readonly cancelRequestedAt: string | null;
  /** The run's pod once it ran, and the step last started (written before the step's exec): where a re-attach would look. */
  readonly pod: string | null;
  readonly step: number | null;
  /** The run ended because the service stopped (it was pending or running then), not by its own verdict. */
  readonly interrupted: boolean;
  /** The run's plan (src/run/run-plan.ts: its settings without secret values), written as it starts. */
  readonly plan: string | null;
  /** The run's latest checkpoint (src/run/run-checkpoint.ts) as JSON, while it runs: where a restart re-attaches. */
  readonly checkpoint: string | null;
  /** The instance that took the run over while this service was away (its Job's owner annotation then); null: none. */
  readonly adoptedBy: string | null;
  /** The instance this service adopted the run from, whose Lease had expired; null: the run was submitted here. */
  readonly adoptedFrom: string | null;
}

export interface StatusEvent {
  readonly cursor: number;
  readonly runId: string;
  readonly status: ServeRunStatus;
  readonly time: string;
  readonly reason?: string;
}

export type NewRun = Omit<
  StoredRun,
  | "seq"
  | "createdAt"
  | "startedAt"
  | "finishedAt"
  | "status"
  | "reason"
  | "cancelRequestedAt"
  | "pod"
  | "step"
  | "interrupted"
  | "plan"
  | "checkpoint"
  | "adoptedBy"
  | "adoptedFrom"
> & { readonly status: "pending" | "skipped"; readonly reason?: string; readonly adoptedFrom?: string };

const SCHEMA_VERSION = 1;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL UNIQUE,
  status TEXT NOT NULL,
  repo TEXT,
  workflow TEXT,
  job_name TEXT NOT NULL,
  target TEXT NOT NULL,
  out_dir TEXT NOT NULL,
  request TEXT NOT NULL,
  has_secrets INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  reason TEXT,
  cancel_requested_at TEXT,
  pod TEXT,
  step INTEGER,
  interrupted INTEGER NOT NULL DEFAULT 0,
  plan TEXT,
  checkpoint TEXT,
  adopted_by TEXT,
  adopted_from TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status, seq);
CREATE INDEX IF NOT EXISTS runs_by_finish ON runs (finished_at);
CREATE TABLE IF NOT EXISTS events (
  cursor INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL,
  status TEXT NOT NULL,
  time TEXT NOT NULL,
  reason TEXT
);
CREATE INDEX IF NOT EXISTS events_by_run ON events (run_id);
`;

interface RunRow {
  seq: number;
  run_id: string;
  status: ServeRunStatus;
  repo: string | null;
  workflow: string | null;
  job_name: string;
  target: string;
  out_dir: string;
  request: string;
  has_secrets: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  reason: string | null;
  cancel_requested_at: string | null;
  pod: string | null;
  step: number | null;
  interrupted: number;
  plan: string | null;
  checkpoint: string | null;
  adopted_by: string | null;
  adopted_from: string | null;
}

function toRun(row: RunRow): StoredRun {
  return {
    seq: row.seq,
    runId: row.run_id,
    status: row.status,
    repo: row.repo,
    workflow: row.workflow,
    jobName: row.job_name,
    target: row.target,
    outDir: row.out_dir,
    request: row.request,
    hasSecrets: row.has_secrets === 1,
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    reason: row.reason,
    cancelRequestedAt: row.cancel_requested_at,
    pod: row.pod,
    step: row.step,
    interrupted: row.interrupted === 1,
    plan: row.plan,
    checkpoint: row.checkpoint,
    adoptedBy: row.adopted_by,
    adoptedFrom: row.adopted_from,
  };
}

function toEvent(row: {
  cursor: number;
  run_id: string;
  status: ServeRunStatus;
  time: string;
  reason: string | null;
}): StatusEvent {
  return {
    cursor: row.cursor,
    runId: row.run_id,
    status: row.status,
    time: row.time,
    ...(row.reason === null ? {} : { reason: row.reason }),
  };
}

/**
 * The store. Synchronous (better-sqlite3): a status change is committed before the call returns, so the caller acts
 * on it only once it is on disk. AUTOINCREMENT keeps cursors and submission order increasing across pruning.
 */
export class RunStore {
  readonly #db: Database.Database;
  readonly #epoch: string;

  /** Opens (creating) `<stateDir>/runner.sqlite` in WAL mode; `:memory:` for tests. */
  /** Throws StateError naming the file, what is wrong with it and what to do, when the state cannot be opened for writing. */
  constructor(stateDir: string | ":memory:") {
    const file = stateDir === ":memory:" ? stateDir : join(stateDir, "runner.sqlite");
    const prepare = (db: Database.Database): void => {
      db.exec(SCHEMA);
      // Added after schema 1 was shipped: an older file gains them, with every run it holds not interrupted and
      // without a plan or checkpoint (such a run, left running, cannot be re-attached to).
      const columns = new Set(
        (db.prepare("SELECT name FROM pragma_table_info('runs')").all() as Array<{ name: string }>).map(
          (column) => column.name,
        ),
      );
      if (!columns.has("interrupted")) db.exec("ALTER TABLE runs ADD COLUMN interrupted INTEGER NOT NULL DEFAULT 0");
      if (!columns.has("plan")) db.exec("ALTER TABLE runs ADD COLUMN plan TEXT");
      if (!columns.has("checkpoint")) db.exec("ALTER TABLE runs ADD COLUMN checkpoint TEXT");
      if (!columns.has("adopted_by")) db.exec("ALTER TABLE runs ADD COLUMN adopted_by TEXT");
      if (!columns.has("adopted_from")) db.exec("ALTER TABLE runs ADD COLUMN adopted_from TEXT");
      const version = db.prepare("SELECT value FROM meta WHERE key = 'schema'").get() as { value: string } | undefined;
      if (version === undefined)
        db.prepare("INSERT INTO meta (key, value) VALUES ('schema', ?)").run(String(SCHEMA_VERSION));
      else if (Number(version.value) !== SCHEMA_VERSION)
        throw new StateError(
          `${file} has schema ${version.value}; this runner reads schema ${SCHEMA_VERSION}: run the runner that wrote it, or move it and runs/ aside to start with an empty state`,
        );
      // Made once, with the database (or the first time a database from before epochs is opened): a new database, a new epoch.
      db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('epoch', ?)").run(
        randomBytes(12).toString("base64url"),
      );
    };
    if (stateDir !== ":memory:") {
      this.#db = openStateDatabase(stateDir, prepare);
    } else {
      // Required here, not imported: the CLI is one bundle, and a static import would load the native addon for every command.
      const open = createRequire(import.meta.url)("better-sqlite3") as typeof Database;
      this.#db = new open(":memory:");
      prepare(this.#db);
    }
    this.#epoch = (this.#db.prepare("SELECT value FROM meta WHERE key = 'epoch'").get() as { value: string }).value;
  }

  /** This database's epoch: a random id made with it. Its cursors mean something only with it; a reset state has another. */
  epoch(): string {
    return this.#epoch;
  }

  /** The journal mode in force ("wal"). */
  journalMode(): string {
    return String(this.#db.pragma("journal_mode", { simple: true }));
  }

  /**
   * Records a new run and its first event in one transaction; when a run of that id exists already, changes nothing
   * and returns it with `created: false` (a submit given again).
   */
  insertRun(run: NewRun, at: string): { run: StoredRun; created: boolean; event?: StatusEvent } {
    return this.#db.transaction(() => {
      const existing = this.getRun(run.runId);
      if (existing) return { run: existing, created: false };
      this.#db
        .prepare(
          `INSERT INTO runs (run_id, status, repo, workflow, job_name, target, out_dir, request, has_secrets, created_at, started_at, finished_at, reason, adopted_from)
           VALUES (@runId, @status, @repo, @workflow, @jobName, @target, @outDir, @request, @hasSecrets, @at, NULL, @finishedAt, @reason, @adoptedFrom)`,
        )
        .run({
          ...run,
          hasSecrets: run.hasSecrets ? 1 : 0,
          at,
          finishedAt: run.status === "skipped" ? at : null,
          reason: run.reason ?? null,
          adoptedFrom: run.adoptedFrom ?? null,
        });
      const event = this.#insertEvent(run.runId, run.status, at, run.reason);
      return { run: this.getRun(run.runId)!, created: true, event };
    })();
  }

  /**
   * Moves a run to `status` and records the event, in one transaction; `running` sets startedAt, a final status
   * finishedAt. Returns undefined, changing nothing, when the run is already over (a final status is final).
   */
  setStatus(runId: string, status: ServeRunStatus, at: string, reason?: string): StatusEvent | undefined {
    return this.#db.transaction(() => {
      const current = this.getRun(runId);
      if (!current || FINAL_STATUSES.has(current.status)) return undefined;
      const final = FINAL_STATUSES.has(status);
      this.#db
        .prepare(
          "UPDATE runs SET status = ?, started_at = COALESCE(started_at, ?), finished_at = ?, reason = COALESCE(?, reason), checkpoint = CASE WHEN ? THEN NULL ELSE checkpoint END WHERE run_id = ?",
        )
        .run(status, status === "running" ? at : null, final ? at : null, reason ?? null, final ? 1 : 0, runId);
      return this.#insertEvent(runId, status, at, reason);
    })();
  }

  /**
   * Records a run a stopped service left pending or running as failed and interrupted, with the event (and the
   * instance that took it over meanwhile, when one did); undefined when it is over already.
   */
  markInterrupted(runId: string, at: string, reason: string, adoptedBy?: string): StatusEvent | undefined {
    return this.#db.transaction(() => {
      const event = this.setStatus(runId, "failed", at, reason);
      if (event)
        this.#db
          .prepare("UPDATE runs SET interrupted = 1, adopted_by = ? WHERE run_id = ?")
          .run(adoptedBy ?? null, runId);
      return event;
    })();
  }

  /** Records a run's plan (before it starts: its status set running in the same transaction by the caller's order). */
  recordPlan(runId: string, plan: string): void {
    this.#db.prepare("UPDATE runs SET plan = ? WHERE run_id = ?").run(plan, runId);
  }

  /** Replaces a running run's checkpoint; a final status clears it (see setStatus). */
  saveCheckpoint(runId: string, checkpoint: string): void {
    this.#db.prepare("UPDATE runs SET checkpoint = ? WHERE run_id = ? AND status = 'running'").run(checkpoint, runId);
  }

  /** Records that a cancel of a running run was asked for (the first time only); false when the run is not running. */
  recordCancelRequest(runId: string, at: string): boolean {
    return (
      this.#db
        .prepare(
          "UPDATE runs SET cancel_requested_at = COALESCE(cancel_requested_at, ?) WHERE run_id = ? AND status = 'running'",
        )
        .run(at, runId).changes === 1
    );
  }

  /** Records where a running run is: its pod once it runs, the step it starts next. */
  recordProgress(runId: string, progress: { readonly pod?: string; readonly step?: number }): void {
    this.#db
      .prepare(
        "UPDATE runs SET pod = COALESCE(?, pod), step = COALESCE(?, step) WHERE run_id = ? AND status = 'running'",
      )
      .run(progress.pod ?? null, progress.step ?? null, runId);
  }

  getRun(runId: string): StoredRun | undefined {
    const row = this.#db.prepare("SELECT * FROM runs WHERE run_id = ?").get(runId) as RunRow | undefined;
    return row && toRun(row);
  }

  /** Runs newest first (by submission), after `beforeSeq` when given, optionally of one status. */
  listRuns(options: {
    readonly status?: ServeRunStatus;
    readonly limit: number;
    readonly beforeSeq?: number;
  }): StoredRun[] {
    const rows = this.#db
      .prepare(
        `SELECT * FROM runs WHERE (@status IS NULL OR status = @status) AND (@before IS NULL OR seq < @before) ORDER BY seq DESC LIMIT @limit`,
      )
      .all({ status: options.status ?? null, before: options.beforeSeq ?? null, limit: options.limit }) as RunRow[];
    return rows.map(toRun);
  }

  /** Runs of one status in submission order: the queue (pending) or what runs (running). */
  listByStatus(status: ServeRunStatus): StoredRun[] {
    return (this.#db.prepare("SELECT * FROM runs WHERE status = ? ORDER BY seq").all(status) as RunRow[]).map(toRun);
  }

  countByStatus(): Map<ServeRunStatus, number> {
    const rows = this.#db.prepare("SELECT status, COUNT(*) AS n FROM runs GROUP BY status").all() as Array<{
      status: ServeRunStatus;
      n: number;
    }>;
    return new Map(rows.map((row) => [row.status, row.n]));
  }

  /** Events after `cursor`, oldest first, at most `limit`. */
  listEventsAfter(cursor: number, limit = 10_000): StatusEvent[] {
    const rows = this.#db
      .prepare("SELECT * FROM events WHERE cursor > ? ORDER BY cursor LIMIT ?")
      .all(cursor, limit) as Array<Parameters<typeof toEvent>[0]>;
    return rows.map(toEvent);
  }

  /** The highest cursor given so far (0 before any event). */
  lastCursor(): number {
    const row = this.#db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'events'").get() as
      { seq: number } | undefined;
    return row?.seq ?? 0;
  }

  /** Deletes runs (and their events) that finished before `before`; returns them, so that their files can go too. */
  pruneFinishedBefore(before: string): StoredRun[] {
    return this.#db.transaction(() => {
      const rows = (
        this.#db.prepare("SELECT * FROM runs WHERE finished_at IS NOT NULL AND finished_at < ?").all(before) as RunRow[]
      ).map(toRun);
      const deleteEvents = this.#db.prepare("DELETE FROM events WHERE run_id = ?");
      const deleteRun = this.#db.prepare("DELETE FROM runs WHERE run_id = ?");
      for (const run of rows) {
        deleteEvents.run(run.runId);
        deleteRun.run(run.runId);
      }
      return rows;
    })();
  }

  close(): void {
    this.#db.close();
  }

  #insertEvent(runId: string, status: ServeRunStatus, time: string, reason: string | undefined): StatusEvent {
    const info = this.#db
      .prepare("INSERT INTO events (run_id, status, time, reason) VALUES (?, ?, ?, ?)")
      .run(runId, status, time, reason ?? null);
    return { cursor: Number(info.lastInsertRowid), runId, status, time, ...(reason === undefined ? {} : { reason }) };
  }
}
