// The executor's durable state: the epoch kept across reopening, dense seqnos, trimming on ack, and leases kept until their terminal is queued.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MillState } from "../../src/mill/mill-state.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const RUNNING = { status: 1, error: "", exitCode: 0 };

describe("mill executor state", () => {
  it("keeps its epoch and its unacknowledged events across a reopen, numbering on densely", () => {
    const dir = makeTestTempDir("mill-state-");
    const first = new MillState(dir);
    assert.match(first.epoch, /^[0-9a-f]{16}$/);
    assert.deepEqual(
      [first.append("a", { statusEvent: RUNNING }).seqno, first.append("b", { statusEvent: RUNNING }).seqno],
      [1, 2],
    );
    first.close();
    const second = new MillState(dir);
    assert.equal(second.epoch, first.epoch);
    assert.deepEqual(
      second.listAfter(0, 10).map((event) => [event.seqno, event.leaseId]),
      [
        [1, "a"],
        [2, "b"],
      ],
    );
    assert.equal(second.append("c", { statusEvent: RUNNING }).seqno, 3);
    second.close();
  });

  it("trims what an ack covers and lists the rest in batches", () => {
    const state = new MillState(":memory:");
    for (let i = 0; i < 300; i++) state.append(`l${i}`, { statusEvent: RUNNING });
    assert.equal(state.trim(100), 100);
    assert.equal(state.depth(), 200);
    const batch = state.listAfter(100, 128);
    assert.deepEqual([batch.length, batch[0]!.seqno, batch.at(-1)!.seqno], [128, 101, 228]);
  });

  it("keeps a committed lease until its terminal is queued, and the terminal it was finishing with", () => {
    const state = new MillState(":memory:");
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

  it("starts a new epoch with an empty outbox on resetStream", () => {
    const state = new MillState(":memory:");
    const epoch = state.epoch;
    state.append("a", { statusEvent: RUNNING });
    assert.notEqual(state.resetStream(), epoch);
    assert.equal(state.depth(), 0);
    assert.equal(state.append("b", { statusEvent: RUNNING }).seqno, 1);
  });
});
