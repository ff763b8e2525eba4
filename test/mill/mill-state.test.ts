// The executor's durable state: the epoch kept across reopening, dense seqnos, trimming on ack, the outbox's cap, and leases kept until their terminal is queued.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import type Database from "better-sqlite3";
import { loadMillCodec, type MillCodec } from "../../src/mill/mill-codec.js";
import { DEFAULT_OUTBOX_CAP_BYTES, MillState } from "../../src/mill/mill-state.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const RUNNING = { status: 1, error: "", exitCode: 0 };

describe("mill executor state", () => {
  let codec: MillCodec;
  before(async () => {
    codec = await loadMillCodec();
  });

  it("keeps its epoch and its unacknowledged events across a reopen, numbering on densely", () => {
    const dir = makeTestTempDir("mill-state-");
    const first = new MillState(dir, { codec });
    assert.match(first.epoch, /^[0-9a-f]{16}$/);
    assert.deepEqual(
      [first.append("a", { statusEvent: RUNNING })!.seqno, first.append("b", { statusEvent: RUNNING })!.seqno],
      [1, 2],
    );
    first.close();
    const second = new MillState(dir, { codec });
    assert.equal(second.epoch, first.epoch);
    assert.deepEqual(
      second.listAfter(0, 10).map((event) => [event.seqno, event.leaseId]),
      [
        [1, "a"],
        [2, "b"],
      ],
    );
    assert.equal(second.append("c", { statusEvent: RUNNING })!.seqno, 3);
    second.close();
  });

  it("trims what an ack covers and lists the rest in batches", () => {
    const state = new MillState(":memory:", { codec });
    for (let i = 0; i < 300; i++) state.append(`l${i}`, { statusEvent: RUNNING });
    assert.equal(state.trim(100), 100);
    assert.equal(state.depth(), 200);
    const batch = state.listAfter(100, 128);
    assert.deepEqual([batch.length, batch[0]!.seqno, batch.at(-1)!.seqno], [128, 101, 228]);
  });

  it("keeps a committed lease until its terminal is queued, and the terminal it was finishing with", () => {
    const state = new MillState(":memory:", { codec });
    state.startLease("l1", '{"job":"j"}', RUNNING);
    state.startLease("l2", '{"job":"k"}', RUNNING);
    state.markFinishing("l2", { status: 1, error: "", exitCode: 0 });
    assert.deepEqual(state.listLeases(), [
      { leaseId: "l1", state: "running", record: '{"job":"j"}' },
      { leaseId: "l2", state: "finishing", record: '{"job":"k"}', terminal: { status: 1, error: "", exitCode: 0 } },
    ]);
    const terminal = state.finishLease("l2", {
      status: 1,
      error: "",
      exitCode: 0,
      logArtifact: { ref: "logs/l2.log", hash: "sha256:ab" },
    });
    assert.equal(terminal.seqno, 3);
    assert.deepEqual(
      state.listLeases().map((lease) => lease.leaseId),
      ["l1"],
    );
  });

  it("keeps a running lease's plan and latest checkpoint with its log length across a reopen, and drops them once it is finishing", () => {
    const dir = makeTestTempDir("mill-state-");
    const first = new MillState(dir, { codec });
    first.startLease("l1", '{"job":"j"}', RUNNING);
    first.recordPlan("l1", '{"version":1}');
    first.saveCheckpoint("l1", '{"phase":"upload"}', 10);
    first.saveCheckpoint("l1", '{"phase":"steps"}', 250);
    first.close();
    const second = new MillState(dir, { codec });
    assert.deepEqual(second.listLeases(), [
      {
        leaseId: "l1",
        state: "running",
        record: '{"job":"j"}',
        plan: '{"version":1}',
        checkpoint: { text: '{"phase":"steps"}', logLength: 250 },
      },
    ]);
    second.markFinishing("l1", { status: 2, error: "", exitCode: 0 });
    second.saveCheckpoint("l1", '{"phase":"teardown"}', 300); // a late one from the run's end: not kept
    assert.deepEqual(second.listLeases(), [
      { leaseId: "l1", state: "finishing", record: '{"job":"j"}', terminal: { status: 2, error: "", exitCode: 0 } },
    ]);
    second.close();
  });

  it("opens a database an older executor wrote (leases without plan or checkpoint) and lists its lease without them", () => {
    const dir = makeTestTempDir("mill-state-");
    const open = createRequire(import.meta.url)("better-sqlite3") as typeof Database;
    const old = new open(join(dir, "mill-executor.sqlite"));
    old.exec(
      "CREATE TABLE leases (lease_id TEXT PRIMARY KEY, state TEXT NOT NULL, record TEXT NOT NULL, terminal TEXT); INSERT INTO leases VALUES ('l0', 'running', '{}', NULL)",
    );
    old.close();
    const state = new MillState(dir, { codec });
    assert.deepEqual(state.listLeases(), [{ leaseId: "l0", state: "running", record: "{}" }]);
    state.recordPlan("l0", "{}");
    assert.equal(state.listLeases()[0]!.plan, "{}");
    state.close();
  });

  it("lists a finishing lease whose kept terminal cannot be read with a FAILED terminal saying so, rather than failing every start", () => {
    const dir = makeTestTempDir("mill-state-");
    const first = new MillState(dir, { codec });
    first.startLease("l1", '{"job":"j"}', RUNNING);
    first.close();
    const open = createRequire(import.meta.url)("better-sqlite3") as typeof Database;
    const raw = new open(join(dir, "mill-executor.sqlite"));
    raw.exec(`UPDATE leases SET state = 'finishing', terminal = '{"status":1,' WHERE lease_id = 'l1'`);
    raw.close();
    const second = new MillState(dir, { codec });
    const [lease] = second.listLeases();
    assert.equal(lease!.state, "finishing");
    assert.equal(lease!.terminal!.status, 2);
    assert.equal(lease!.terminal!.exitCode, -1);
    assert.match(lease!.terminal!.error, /^runner-lost: the executor restarted and could not read the run's result: /);
    second.close();
  });

  it("starts a new epoch with an empty outbox on resetStream", () => {
    const state = new MillState(":memory:", { codec });
    const epoch = state.epoch;
    state.append("a", { statusEvent: RUNNING });
    assert.notEqual(state.resetStream(), epoch);
    assert.equal(state.depth(), 0);
    assert.equal(state.append("b", { statusEvent: RUNNING })!.seqno, 1);
  });

  it("drops a status event that would pass the outbox's cap, keeps every terminal past it, and takes statuses again once an ack frees room", () => {
    const dir = makeTestTempDir("mill-state-cap-");
    // One RUNNING event of a 2-byte lease id is 10 bytes of protobuf; three fit under the cap, a fourth would not.
    const row = 10;
    const state = new MillState(dir, { codec, outboxCapBytes: 3 * row + 1 });
    assert.deepEqual(
      ["l1", "l2", "l3"].map((id) => state.append(id, { statusEvent: RUNNING })?.seqno),
      [1, 2, 3],
    );
    assert.equal(state.bytes(), 3 * row);
    assert.equal(state.isFull(), false);
    assert.equal(state.append("l4", { statusEvent: RUNNING }), undefined);
    assert.equal(state.startLease("l5", '{"job":"j"}', RUNNING), undefined);
    assert.deepEqual(
      state.listLeases().map((lease) => lease.leaseId),
      ["l5"],
    ); // the lease is remembered: its terminal must still go out
    const big = { status: 2, error: "x".repeat(5 * row), exitCode: 1 };
    assert.equal(state.append("l1", { attemptResult: big }).seqno, 4); // no seqno was spent on the dropped ones
    assert.equal(state.finishLease("l5", { status: 1, error: "", exitCode: 0 }).seqno, 5);
    assert.equal(state.isFull(), true);
    assert.equal(state.append("l6", { statusEvent: RUNNING }), undefined);
    assert.deepEqual(
      state.listAfter(0, 10).map((event) => [event.seqno, event.leaseId, "attemptResult" in event]),
      [
        [1, "l1", false],
        [2, "l2", false],
        [3, "l3", false],
        [4, "l1", true],
        [5, "l5", true],
      ],
    );
    const before = state.bytes();
    state.close();
    const reopened = new MillState(dir, { codec, outboxCapBytes: 3 * row + 1 });
    assert.equal(reopened.bytes(), before); // counted again from the rows at open
    reopened.trim(5);
    assert.equal(reopened.bytes(), 0);
    assert.equal(reopened.append("l7", { statusEvent: RUNNING })?.seqno, 6);
    reopened.close();
  });

  it("counts each queued event at its encoded protobuf size (spindle's byte_size), not at its stored JSON", () => {
    const state = new MillState(":memory:", { codec });
    // Event{seqno 1, lease_id "l1", status_event{status RUNNING}}: 2 + 4 + 4 bytes on the wire.
    state.append("l1", { statusEvent: RUNNING });
    assert.equal(state.bytes(), 10);
    // A terminal with an error and an artifact: its bytes are the Event's protobuf, whatever the JSON's quoting.
    const terminal = {
      status: 2,
      error: 'a "quoted"\nerror',
      exitCode: -1,
      logArtifact: { ref: "logs/l1.log", hash: "sha256:ab" },
    };
    state.append("l1", { attemptResult: terminal });
    // seqno 2 (2) + lease id (4) + attempt_result's tag and length (2) + status (2) + error (2 + 16)
    // + exit_code -1 (1 + 10) + log_artifact (2 + ref 2 + 11 + hash 2 + 9).
    assert.equal(state.bytes(), 10 + 65);
    state.close();
  });

  it("counts at their protobuf size the events an older executor queued without one", () => {
    const dir = makeTestTempDir("mill-state-");
    const open = createRequire(import.meta.url)("better-sqlite3") as typeof Database;
    const old = new open(join(dir, "mill-executor.sqlite"));
    old.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE outbox (epoch TEXT NOT NULL, seqno INTEGER NOT NULL, lease_id TEXT NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (epoch, seqno));
      INSERT INTO meta VALUES ('epoch', 'e0'), ('next_seqno', '2');
      INSERT INTO outbox VALUES ('e0', 1, 'l1', '{"statusEvent":{"status":1,"error":"","exitCode":0}}');`);
    old.close();
    const state = new MillState(dir, { codec });
    assert.equal(state.bytes(), 10);
    state.trim(1);
    assert.equal(state.bytes(), 0);
    state.close();
  });

  it("bounds the outbox at spindle's 10 MiB unless told otherwise", () => {
    const state = new MillState(":memory:", { codec });
    assert.equal(state.capBytes, 10 * 1024 * 1024);
    assert.equal(DEFAULT_OUTBOX_CAP_BYTES, 10 * 1024 * 1024);
  });
});
