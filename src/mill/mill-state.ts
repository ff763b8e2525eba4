// The executor's durable state in SQLite (WAL): its epoch, the event outbox with dense sequence numbers (bounded in encoded bytes, as spindle's), and each committed lease (its run's plan and last checkpoint, never a secret) until its terminal is queued.
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type Database from "better-sqlite3";
import type { MillCodec } from "./mill-codec.js";
import { TERMINAL_STATUS, type AttemptResult, type MillEvent, type StatusEvent } from "./mill-messages.js";

/** What an outbox row carries besides its sequence number. */
export type EventPayload = { readonly statusEvent: StatusEvent } | { readonly attemptResult: AttemptResult };

/**
 * A committed lease as the executor remembers it across a crash: `running` until the run ends, then `finishing`
 * with its terminal (the log upload under way), then gone once the terminal is in the outbox.
 */
export interface StoredLease {
  readonly leaseId: string;
  readonly state: "running" | "finishing";
  /** What the launcher needs to clean up after a lost run (its Job), as it gave it; JSON. */
  readonly record: string;
  /** The terminal to queue once the log is stored (state finishing). */
  readonly terminal?: AttemptResult;
  /** The run's plan (src/run/run-plan.ts: no secret value), once its settings were made: what a restart re-attaches with. */
  readonly plan?: string;
  /** The run's last checkpoint (JSON), and the length the lease's log file had at it. */
  readonly checkpoint?: { readonly text: string; readonly logLength: number };
  /** The reason of a CancelAttempt the mill sent (and was answered) while the lease ran: a restart ends it cancelled. */
  readonly cancelReason?: string;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS outbox (epoch TEXT NOT NULL, seqno INTEGER NOT NULL, lease_id TEXT NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (epoch, seqno));
CREATE TABLE IF NOT EXISTS leases (lease_id TEXT PRIMARY KEY, state TEXT NOT NULL, record TEXT NOT NULL, terminal TEXT);
`;

/** Columns added after the first release, each added to a database that lacks it. */
const ADDED_COLUMNS = {
  leases: { plan: "TEXT", checkpoint: "TEXT", log_length: "INTEGER", cancel_reason: "TEXT" },
  // The row's Event as protobuf bytes (spindle's byte_size); NULL in a row an older executor wrote, counted at open.
  outbox: { byte_size: "INTEGER" },
} as const;

/** Spindle's executor's outbox cap: past it, status events are dropped; terminals are always kept. */
export const DEFAULT_OUTBOX_CAP_BYTES = 10 * 1024 * 1024;

export interface MillStateOptions {
  /** Measures each event as the mill receives it (its protobuf bytes), which is what the cap counts, as spindle's does. */
  readonly codec: Pick<MillCodec, "eventSize">;
  /** The outbox's bound in bytes of encoded events; DEFAULT_OUTBOX_CAP_BYTES when absent. */
  readonly outboxCapBytes?: number;
}

/** The state directory's database (`mill-executor.sqlite`); the epoch is made on first open and kept until `resetStream`. */
export class MillState {
  readonly #db: Database.Database;
  readonly #capBytes: number;
  readonly #codec: Pick<MillCodec, "eventSize">;
  #epoch: string;
  /** The bytes the current epoch's outbox holds (counted once at open, then kept up to date). */
  #bytes = 0;

  constructor(stateDir: string, options: MillStateOptions) {
    this.#capBytes = options.outboxCapBytes ?? DEFAULT_OUTBOX_CAP_BYTES;
    this.#codec = options.codec;
    if (stateDir !== ":memory:") mkdirSync(stateDir, { recursive: true });
    const open = createRequire(import.meta.url)("better-sqlite3") as typeof Database;
    this.#db = new open(stateDir === ":memory:" ? ":memory:" : join(stateDir, "mill-executor.sqlite"));
    this.#db.pragma("journal_mode = WAL");
    // Durable on every commit: an event the mill is told of must survive a power loss, not only a crash.
    this.#db.pragma("synchronous = FULL");
    this.#db.exec(SCHEMA);
    for (const [table, added] of Object.entries(ADDED_COLUMNS)) {
      const columns = new Set(
        (this.#db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((column) => column.name),
      );
      for (const [name, type] of Object.entries(added))
        if (!columns.has(name)) this.#db.exec(`ALTER TABLE ${table} ADD COLUMN ${name} ${type}`);
    }
    this.#measureOldRows();
    this.#epoch = this.#readMeta("epoch") ?? this.resetStream();
    this.#bytes = this.#sumBytes("");
  }

  /** The epoch the executor says in Hello: the same across restarts, as spindle's executor keeps it. */
  get epoch(): string {
    return this.#epoch;
  }

  /** A new epoch (8 random bytes, hex) with an empty outbox: what `spindle executor reset-stream` does. */
  resetStream(): string {
    const epoch = randomBytes(8).toString("hex");
    this.#db.transaction(() => {
      this.#db.prepare("DELETE FROM outbox").run();
      this.#writeMeta("epoch", epoch);
      this.#writeMeta("next_seqno", "1");
    })();
    this.#epoch = epoch;
    this.#bytes = 0;
    return epoch;
  }

  /**
   * Queues one event under the next sequence number of the epoch; resolves the event as it will be sent. A terminal
   * is always queued; a status event that would take the outbox past its cap is dropped (undefined), as spindle's
   * executor drops nonterminal statuses: the mill learns the end of a run, if not that it started.
   */
  append(leaseId: string, payload: { readonly attemptResult: AttemptResult }): MillEvent;
  append(leaseId: string, payload: EventPayload): MillEvent | undefined;
  append(leaseId: string, payload: EventPayload): MillEvent | undefined {
    return this.#db.transaction(() => this.#appendLocked(leaseId, payload))();
  }

  /** The queued events after `seqno`, oldest first, at most `limit`. */
  listAfter(seqno: number, limit: number): MillEvent[] {
    const rows = this.#db
      .prepare("SELECT seqno, lease_id, payload FROM outbox WHERE epoch = ? AND seqno > ? ORDER BY seqno LIMIT ?")
      .all(this.#epoch, seqno, limit) as Array<{ seqno: number; lease_id: string; payload: string }>;
    return rows.map((row) => ({
      seqno: row.seqno,
      leaseId: row.lease_id,
      ...(JSON.parse(row.payload) as EventPayload),
    }));
  }

  /** Drops the events the mill acknowledged (seqno ≤ upTo); returns how many went. */
  trim(upTo: number): number {
    return this.#db.transaction(() => {
      const freed = this.#sumBytes("AND seqno <= ?", upTo);
      const changes = this.#db
        .prepare("DELETE FROM outbox WHERE epoch = ? AND seqno <= ?")
        .run(this.#epoch, upTo).changes;
      this.#bytes = Math.max(0, this.#bytes - freed);
      return changes;
    })();
  }

  /** Bytes of events queued and not yet acknowledged, as counted against the cap. */
  bytes(): number {
    return this.#bytes;
  }

  /** The outbox's cap in bytes. */
  get capBytes(): number {
    return this.#capBytes;
  }

  /** Whether the outbox is at or past its cap: a status event would be dropped now. */
  isFull(): boolean {
    return this.#bytes >= this.#capBytes;
  }

  /** Events queued and not yet acknowledged. */
  depth(): number {
    return (this.#db.prepare("SELECT COUNT(*) AS n FROM outbox WHERE epoch = ?").get(this.#epoch) as { n: number }).n;
  }

  /** Remembers a committed lease and queues its RUNNING event, in one transaction; the event is dropped (undefined) when the outbox is past its cap. */
  startLease(leaseId: string, record: string, running: StatusEvent): MillEvent | undefined {
    return this.#db.transaction(() => {
      this.#db
        .prepare(
          "INSERT OR REPLACE INTO leases (lease_id, state, record, terminal, plan, checkpoint, log_length, cancel_reason) VALUES (?, 'running', ?, NULL, NULL, NULL, NULL, NULL)",
        )
        .run(leaseId, record);
      return this.#appendLocked(leaseId, { statusEvent: running });
    })();
  }

  /** Keeps the run's plan (no secret value) with its lease: a restart re-attaches to the run with it. */
  recordPlan(leaseId: string, plan: string): void {
    this.#db.prepare("UPDATE leases SET plan = ? WHERE lease_id = ? AND state = 'running'").run(plan, leaseId);
  }

  /** Keeps the run's latest checkpoint and the length its lease's log file had there (the restart cuts it back to that). */
  saveCheckpoint(leaseId: string, checkpoint: string, logLength: number): void {
    this.#db
      .prepare("UPDATE leases SET checkpoint = ?, log_length = ? WHERE lease_id = ? AND state = 'running'")
      .run(checkpoint, logLength, leaseId);
  }

  /** Keeps a cancel the mill sent for a running lease, before it is answered: a restart cancels the lease rather than continuing it. */
  recordCancel(leaseId: string, reason: string): void {
    this.#db
      .prepare("UPDATE leases SET cancel_reason = ? WHERE lease_id = ? AND state = 'running'")
      .run(reason, leaseId);
  }

  /** Records the lease's terminal before its log is stored, so a restart stores the log and queues it (the run is not continued). */
  markFinishing(leaseId: string, terminal: AttemptResult): void {
    this.#db
      .prepare(
        "UPDATE leases SET state = 'finishing', terminal = ?, plan = NULL, checkpoint = NULL, log_length = NULL WHERE lease_id = ?",
      )
      .run(JSON.stringify(terminal), leaseId);
  }

  /** Queues the lease's terminal and forgets the lease, in one transaction. */
  finishLease(leaseId: string, terminal: AttemptResult): MillEvent {
    return this.#db.transaction(() => {
      this.#db.prepare("DELETE FROM leases WHERE lease_id = ?").run(leaseId);
      return this.#appendLocked(leaseId, { attemptResult: terminal })!; // a terminal is never dropped
    })();
  }

  /** The leases committed and not finished: after a restart, the runs this process lost. */
  listLeases(): StoredLease[] {
    const rows = this.#db
      .prepare(
        "SELECT lease_id, state, record, terminal, plan, checkpoint, log_length, cancel_reason FROM leases ORDER BY lease_id",
      )
      .all() as Array<{
      lease_id: string;
      state: "running" | "finishing";
      record: string;
      terminal: string | null;
      plan: string | null;
      checkpoint: string | null;
      log_length: number | null;
      cancel_reason: string | null;
    }>;
    return rows.map((row) => ({
      leaseId: row.lease_id,
      state: row.state,
      record: row.record,
      ...(row.terminal === null ? {} : { terminal: readTerminal(row.terminal) }),
      ...(row.plan === null ? {} : { plan: row.plan }),
      ...(row.checkpoint === null ? {} : { checkpoint: { text: row.checkpoint, logLength: row.log_length ?? 0 } }),
      ...(row.cancel_reason === null ? {} : { cancelReason: row.cancel_reason }),
    }));
  }

  close(): void {
    this.#db.close();
  }

  #appendLocked(leaseId: string, payload: EventPayload): MillEvent | undefined {
    const seqno = Number(this.#readMeta("next_seqno") ?? "1");
    const event: MillEvent = { seqno, leaseId, ...payload };
    const size = this.#codec.eventSize(event);
    // Spindle's rule: a nonterminal that would pass the cap is dropped; a terminal is kept whatever the outbox holds.
    if ("statusEvent" in payload && this.#bytes + size > this.#capBytes) return undefined;
    this.#db
      .prepare("INSERT INTO outbox (epoch, seqno, lease_id, payload, byte_size) VALUES (?, ?, ?, ?, ?)")
      .run(this.#epoch, seqno, leaseId, JSON.stringify(payload), size);
    this.#writeMeta("next_seqno", String(seqno + 1));
    this.#bytes += size;
    return event;
  }

  /** Rows an older executor queued carry no size: each is measured once, as it will be sent. */
  #measureOldRows(): void {
    const rows = this.#db
      .prepare("SELECT epoch, seqno, lease_id, payload FROM outbox WHERE byte_size IS NULL")
      .all() as Array<{ epoch: string; seqno: number; lease_id: string; payload: string }>;
    const update = this.#db.prepare("UPDATE outbox SET byte_size = ? WHERE epoch = ? AND seqno = ?");
    this.#db.transaction(() => {
      for (const row of rows) {
        const event = { seqno: row.seqno, leaseId: row.lease_id, ...(JSON.parse(row.payload) as EventPayload) };
        update.run(this.#codec.eventSize(event), row.epoch, row.seqno);
      }
    })();
  }

  #sumBytes(where: string, ...values: number[]): number {
    const row = this.#db
      .prepare(`SELECT COALESCE(SUM(byte_size), 0) AS n FROM outbox WHERE epoch = ? ${where}`)
      .get(this.#epoch, ...values) as { n: number };
    return row.n;
  }

  #readMeta(key: string): string | undefined {
    return (this.#db.prepare("SELECT value FROM meta WHERE key = ?").get(key) as { value: string } | undefined)?.value;
  }

  #writeMeta(key: string, value: string): void {
    this.#db
      .prepare("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
      .run(key, value);
  }
}

/** A kept terminal; one that cannot be read (a damaged row) is a failure saying so: a restart must not stop on it. */
function readTerminal(text: string): AttemptResult {
  try {
    return JSON.parse(text) as AttemptResult;
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return {
      status: TERMINAL_STATUS.failed,
      exitCode: -1,
      error: `runner-lost: the executor restarted and could not read the run's result: ${why}`,
    };
  }
}
