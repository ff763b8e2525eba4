import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { RunStore, type NewRun } from "../../src/serve/run-store.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const run = (runId: string, extra: Partial<NewRun> = {}): NewRun => ({
  runId,
  status: "pending",
  repo: "did:plc:a/repo",
  workflow: "ci.yml",
  jobName: `knotless-run-${runId}`,
  target: JSON.stringify({ namespace: "ci" }),
  outDir: `/state/runs/${runId}`,
  request: "{}",
  hasSecrets: false,
  ...extra,
});

describe("the run store", () => {
  it("opens runner.sqlite in the state directory in WAL mode", () => {
    const store = new RunStore(makeTestTempDir("serve-store-"));
    assert.equal(store.journalMode(), "wal");
    store.close();
  });

  it("keeps its epoch when reopened, and a new database gets another", () => {
    const dir = makeTestTempDir("serve-store-");
    const first = new RunStore(dir);
    const epoch = first.epoch();
    first.close();
    const again = new RunStore(dir);
    assert.equal(again.epoch(), epoch);
    again.close();
    const other = new RunStore(makeTestTempDir("serve-store-"));
    assert.match(other.epoch(), /^[A-Za-z0-9_-]{16}$/);
    assert.notEqual(other.epoch(), epoch);
    other.close();
  });

  it("gives every status change an increasing cursor and lists the events after a cursor", () => {
    const store = new RunStore(":memory:");
    const a = store.insertRun(run("a"), "2026-01-01T00:00:00.000Z").event!;
    const b = store.insertRun(run("b"), "2026-01-01T00:00:01.000Z").event!;
    const started = store.setStatus("a", "running", "2026-01-01T00:00:02.000Z")!;
    const ended = store.setStatus("a", "success", "2026-01-01T00:00:03.000Z")!;
    assert.ok(a.cursor < b.cursor && b.cursor < started.cursor && started.cursor < ended.cursor);
    assert.deepEqual(
      store.listEventsAfter(b.cursor).map((e) => [e.runId, e.status]),
      [
        ["a", "running"],
        ["a", "success"],
      ],
    );
    assert.equal(store.lastCursor(), ended.cursor);
    const stored = store.getRun("a")!;
    assert.equal(stored.startedAt, "2026-01-01T00:00:02.000Z");
    assert.equal(stored.finishedAt, "2026-01-01T00:00:03.000Z");
  });

  it("returns the run already there, and records nothing, when the same run id is inserted again", () => {
    const store = new RunStore(":memory:");
    const first = store.insertRun(run("same"), "2026-01-01T00:00:00.000Z");
    const again = store.insertRun(run("same", { workflow: "other.yml" }), "2026-01-01T00:00:05.000Z");
    assert.equal(first.created, true);
    assert.equal(again.created, false);
    assert.equal(again.event, undefined);
    assert.equal(again.run.workflow, "ci.yml");
    assert.equal(store.listEventsAfter(0).length, 1);
  });

  it("changes nothing once a run is over: a final status is final", () => {
    const store = new RunStore(":memory:");
    store.insertRun(run("a"), "2026-01-01T00:00:00.000Z");
    store.setStatus("a", "cancelled", "2026-01-01T00:00:01.000Z", "cancelled by the client");
    assert.equal(store.setStatus("a", "running", "2026-01-01T00:00:02.000Z"), undefined);
    assert.equal(store.getRun("a")!.status, "cancelled");
    assert.equal(store.getRun("a")!.reason, "cancelled by the client");
  });

  it("records a skipped run as finished when it is inserted", () => {
    const store = new RunStore(":memory:");
    const { run: skipped } = store.insertRun(
      run("s", { status: "skipped", reason: "push does not match" }),
      "2026-01-01T00:00:00.000Z",
    );
    assert.equal(skipped.finishedAt, "2026-01-01T00:00:00.000Z");
    assert.equal(skipped.reason, "push does not match");
  });

  it("lists runs newest first, a page at a time, and the queue in submission order", () => {
    const store = new RunStore(":memory:");
    for (const id of ["r1", "r2", "r3", "r4"]) store.insertRun(run(id), "2026-01-01T00:00:00.000Z");
    store.setStatus("r2", "running", "2026-01-01T00:00:01.000Z");
    const page1 = store.listRuns({ limit: 2 });
    assert.deepEqual(
      page1.map((r) => r.runId),
      ["r4", "r3"],
    );
    assert.deepEqual(
      store.listRuns({ limit: 2, beforeSeq: page1.at(-1)!.seq }).map((r) => r.runId),
      ["r2", "r1"],
    );
    assert.deepEqual(
      store.listRuns({ limit: 10, status: "running" }).map((r) => r.runId),
      ["r2"],
    );
    assert.deepEqual(
      store.listByStatus("pending").map((r) => r.runId),
      ["r1", "r3", "r4"],
    );
    assert.equal(store.countByStatus().get("pending"), 3);
  });

  it("prunes runs that finished before a time, with their events, and keeps cursors increasing after", () => {
    const store = new RunStore(":memory:");
    store.insertRun(run("old"), "2026-01-01T00:00:00.000Z");
    store.setStatus("old", "success", "2026-01-01T00:00:01.000Z");
    store.insertRun(run("live"), "2026-01-02T00:00:00.000Z");
    const last = store.lastCursor();
    assert.deepEqual(
      store.pruneFinishedBefore("2026-01-01T12:00:00.000Z").map((r) => r.runId),
      ["old"],
    );
    assert.equal(store.getRun("old"), undefined);
    assert.deepEqual(
      store.listEventsAfter(0).map((e) => e.runId),
      ["live"],
    );
    assert.ok(store.insertRun(run("new"), "2026-01-03T00:00:00.000Z").event!.cursor > last);
  });

  it("keeps its rows across a reopen of the same state directory", () => {
    const dir = makeTestTempDir("serve-store-");
    const store = new RunStore(dir);
    store.insertRun(run("kept", { hasSecrets: true }), "2026-01-01T00:00:00.000Z");
    store.close();
    const reopened = new RunStore(dir);
    assert.equal(reopened.getRun("kept")!.hasSecrets, true);
    assert.equal(reopened.getRun("kept")!.jobName, "knotless-run-kept");
    reopened.close();
  });

  it("keeps a running run's plan and latest checkpoint across a reopen, and drops the checkpoint once the run is over", () => {
    const dir = makeTestTempDir("serve-store-");
    const store = new RunStore(dir);
    store.insertRun(run("r"), "2026-01-01T00:00:00.000Z");
    store.recordPlan("r", '{"version":1}');
    store.setStatus("r", "running", "2026-01-01T00:00:01.000Z");
    store.saveCheckpoint("r", '{"phase":"upload"}');
    store.saveCheckpoint("r", '{"phase":"steps"}');
    store.close();
    const reopened = new RunStore(dir);
    assert.equal(reopened.getRun("r")!.plan, '{"version":1}');
    assert.equal(reopened.getRun("r")!.checkpoint, '{"phase":"steps"}');
    reopened.setStatus("r", "success", "2026-01-01T00:00:09.000Z");
    assert.equal(reopened.getRun("r")!.checkpoint, null);
    reopened.saveCheckpoint("r", '{"phase":"outputs"}'); // a late one of a run that is over
    assert.equal(reopened.getRun("r")!.checkpoint, null);
    reopened.close();
  });

  it("adds the plan and checkpoint columns to a database made before them, its runs without either", async () => {
    const dir = makeTestTempDir("serve-store-");
    const { createRequire } = await import("node:module");
    const Database = createRequire(import.meta.url)("better-sqlite3");
    const old = new Database(join(dir, "runner.sqlite"));
    old.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      INSERT INTO meta VALUES ('schema', '1');
      CREATE TABLE runs (seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL UNIQUE, status TEXT NOT NULL, repo TEXT,
        workflow TEXT, job_name TEXT NOT NULL, target TEXT NOT NULL, out_dir TEXT NOT NULL, request TEXT NOT NULL,
        has_secrets INTEGER NOT NULL, created_at TEXT NOT NULL, started_at TEXT, finished_at TEXT, reason TEXT,
        cancel_requested_at TEXT, pod TEXT, step INTEGER);
      INSERT INTO runs (run_id, status, job_name, target, out_dir, request, has_secrets, created_at)
        VALUES ('old', 'running', 'knotless-old', '{}', '/x', '{}', 0, '2026-01-01T00:00:00.000Z');`);
    old.close();
    const store = new RunStore(dir);
    const stored = store.getRun("old")!;
    assert.equal(stored.plan, null);
    assert.equal(stored.checkpoint, null);
    assert.equal(stored.interrupted, false);
    store.close();
  });
});
