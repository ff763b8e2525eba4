// The mill session against a stand-in mill with a scripted launcher: handshake, seats, commits, cancels, the outbox across drops and restarts, bad frames, drain.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, it } from "node:test";
import { createDirLogStore, type LogStore } from "../../src/mill/log-store.js";
import { loadMillCodec } from "../../src/mill/mill-codec.js";
import { TERMINAL_STATUS, REJECT_CLASS } from "../../src/mill/mill-messages.js";
import { MillSession, type MillTimings } from "../../src/mill/mill-session.js";
import { MillState } from "../../src/mill/mill-state.js";
import { ScriptedLauncher } from "../support/scripted-launcher.js";
import { StandInMill } from "../support/stand-in-mill.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const TOKEN = "test-token";
const FAST: Partial<MillTimings> = {
  backoffMinMs: 50,
  backoffMaxMs: 200,
  snapshotMs: 300,
  cancelGraceMs: 400,
  uploadRetryMs: 50,
  handshakeMs: 2_000,
};
const PIPELINE = JSON.stringify({
  triggerMetadata: {
    kind: "push",
    repo: { knot: "knot.example", did: "did:plc:abc", repo: "r", defaultBranch: "main" },
    push: { ref: "refs/heads/main", oldSha: "0".repeat(40), newSha: "a".repeat(40) },
  },
});
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function offer(leaseId: string, extra: { engine?: string; image?: string } = {}) {
  return {
    leaseId,
    targetEngine: extra.engine ?? "nixery",
    rawPipelineJson: PIPELINE,
    rawWorkflowJson: JSON.stringify({
      name: "ci.yml",
      engine: extra.engine ?? "nixery",
      ...(extra.image ? { image: extra.image } : {}),
    }),
    knot: "knot.example",
    rkey: "3abc",
  };
}

async function startExecutor(
  options: {
    maxRuns?: number;
    dir?: string;
    mill?: StandInMill;
    ack?: boolean;
    logStore?: LogStore;
    outboxCapBytes?: number;
    liveLogBufferBytes?: number;
    timings?: Partial<MillTimings>;
  } = {},
) {
  const mill =
    options.mill ?? (await StandInMill.start({ token: TOKEN, ack: options.ack ?? true, cancelDeadlineMs: 10_000 }));
  if (!options.mill) cleanups.push(() => mill.close());
  const dir = options.dir ?? makeTestTempDir("mill-session-");
  const launcher = new ScriptedLauncher();
  const codec = await loadMillCodec();
  const state = new MillState(join(dir, "state"), {
    codec,
    ...(options.outboxCapBytes === undefined ? {} : { outboxCapBytes: options.outboxCapBytes }),
  });
  const warnings: string[] = [];
  const session = new MillSession({
    url: mill.url,
    token: TOKEN,
    labels: ["k8s"],
    arch: "amd64",
    maxRuns: options.maxRuns ?? 2,
    state,
    codec,
    launcher,
    logStore: options.logStore ?? createDirLogStore(join(dir, "store")),
    logDir: join(dir, "logs"),
    timings: { ...FAST, ...options.timings },
    warn: (message) => warnings.push(message),
    ...(options.liveLogBufferBytes === undefined ? {} : { liveLogBufferBytes: options.liveLogBufferBytes }),
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await session.stop();
    state.close();
  };
  cleanups.push(stop);
  const connectionsBefore = mill.connections;
  session.start();
  await mill.waitFor(
    () => mill.connections > connectionsBefore && mill.connected && mill.messages("nodeSnapshot").length > 0,
    20_000,
    "the first snapshot",
  );
  return { mill, dir, launcher, state, session, warnings, stop };
}

async function runToCommit(mill: StandInMill, leaseId: string) {
  assert.equal((await mill.reserve(offer(leaseId))).accepted, true);
  assert.equal(await mill.commit(leaseId, [{ key: "TOKEN", value: "s3cr3t" }]), "committed");
}

describe("mill session", () => {
  it("says Hello with protocol 1, its labels and epoch, then snapshots its engines as available", async () => {
    const { mill, state } = await startExecutor();
    const [hello] = mill.messages("hello");
    assert.deepEqual(hello, { protocolVersion: 1, arch: "amd64", labels: ["k8s"], epoch: state.epoch });
    const snapshot = mill.messages("nodeSnapshot")[0]!;
    assert.deepEqual(Object.keys(snapshot.engines).sort(), ["microvm", "nixery"]);
    assert.equal(snapshot.engines.nixery!.available, true);
    assert.deepEqual(snapshot.activeLeaseIds, []);
  });

  it("runs a committed lease: Committed (again for a repeat), RUNNING, live lines, then SUCCESS with the stored log's sha256", async () => {
    const { mill, launcher, dir } = await startExecutor();
    await runToCommit(mill, "3abc-1");
    assert.equal(await mill.commit("3abc-1"), "committed");
    assert.deepEqual(launcher.runs.get("3abc-1")!.secrets, [{ key: "TOKEN", value: "s3cr3t" }]);
    const run = launcher.runs.get("3abc-1")!;
    run.line("hello");
    run.line("world");
    await mill.waitFor(() => mill.liveLines("3abc-1").length === 2, 20_000, "two live lines");
    run.finish({ status: "success", exitCode: 0, error: "" });
    const terminal = await mill.waitFor(() => mill.terminals.get("3abc-1"), 20_000, "the terminal");
    assert.deepEqual(mill.statuses.get("3abc-1"), ["running", "success"]);
    assert.equal(terminal.status, TERMINAL_STATUS.success);
    assert.equal(terminal.logArtifact!.ref, "logs/3abc-1.log");
    const stored = readFileSync(join(dir, "store", "logs", "3abc-1.log"));
    assert.equal(terminal.logArtifact!.hash, `sha256:${createHash("sha256").update(stored).digest("hex")}`);
    assert.deepEqual(
      stored
        .toString()
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line).content),
      ["hello", "world"],
    );
    assert.deepEqual([mill.violations, mill.failedByMill], [[], []]);
  });

  it("rejects a reserve TRANSIENT when every seat is taken, and frees the seat on release and on the reservation's expiry", async () => {
    const { mill } = await startExecutor({ maxRuns: 1 });
    assert.equal((await mill.reserve(offer("l-1"))).accepted, true);
    const full = await mill.reserve(offer("l-2"));
    assert.deepEqual([full.accepted, full.rejectClass], [false, REJECT_CLASS.transient]);
    assert.match(full.rejectReason, /no free seat/);
    mill.release("l-1");
    await mill.waitFor(
      () => mill.messages("nodeSnapshot").at(-1)!.activeLeaseIds.length === 0,
      20_000,
      "a snapshot without l-1",
    );
    assert.equal((await mill.reserve({ ...offer("l-3"), ttlSeconds: 1 })).accepted, true);
    await mill.waitFor(
      () => mill.messages("nodeSnapshot").at(-1)!.activeLeaseIds.length === 0,
      20_000,
      "the expiry of l-3",
    );
    assert.equal((await mill.reserve(offer("l-4"))).accepted, true);
  });

  it("stops without a reserved seat's expiry timer keeping the process alive", async () => {
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length;
    const idle = await startExecutor();
    await idle.stop();
    const afterIdleStop = timers();
    const { mill, stop } = await startExecutor({ mill: idle.mill });
    assert.equal((await mill.reserve({ ...offer("stop-1"), ttlSeconds: 600 })).accepted, true);
    await stop();
    assert.equal(timers(), afterIdleStop, "timers left after stopping with a seat reserved, against stopping idle");
  });

  it("rejects an engine or an image it could never run INCOMPATIBLE, with the reason in words", async () => {
    const { mill } = await startExecutor();
    const engine = await mill.reserve(offer("l-1", { engine: "dagger" }));
    assert.deepEqual(
      [engine.accepted, engine.rejectClass, engine.rejectReason],
      [false, REJECT_CLASS.incompatible, "engine dagger is not run here"],
    );
    const image = await mill.reserve(offer("l-2", { engine: "microvm", image: "forbidden/x" }));
    assert.deepEqual([image.accepted, image.rejectClass], [false, REJECT_CLASS.incompatible]);
    assert.match(image.rejectReason, /not allowed by the limits/);
  });

  it("answers a commit of a lease it does not hold with a TRANSIENT rejection", async () => {
    const { mill } = await startExecutor();
    const answer = await mill.commit("nobody-1");
    assert.notEqual(answer, "committed");
    assert.deepEqual(answer !== "committed" && [answer.accepted, answer.rejectClass, answer.rejectReason], [
      false,
      REJECT_CLASS.transient,
      "reservation missing or expired",
    ]);
  });

  it("acknowledges a cancel for a lease it does not know with a cancelled terminal, as spindle's executor does", async () => {
    const { mill } = await startExecutor();
    const timing = await mill.cancel("ghost-1");
    assert.ok(timing.terminalMs < 10_000);
    assert.deepEqual(mill.statuses.get("ghost-1"), ["cancelled"]);
    assert.deepEqual(mill.violations, []);
  });

  it("acknowledges a cancel that crosses the lease's terminal without queueing a second terminal", async () => {
    const { mill, launcher, state } = await startExecutor();
    mill.ackEnabled = false;
    await runToCommit(mill, "x-1");
    launcher.runs.get("x-1")!.finish({ status: "success", exitCode: 0, error: "" });
    await mill.waitFor(() => mill.terminals.get("x-1"), 20_000, "the terminal");
    const depth = state.depth();
    mill.send({ kind: "cancelAttempt", body: { leaseId: "x-1", reason: "workflow destroyed" } });
    await mill.waitFor(() => mill.messages("cancelAck").some((ack) => ack.leaseId === "x-1"), 20_000, "the CancelAck");
    assert.equal(state.depth(), depth, "no event queued for the cancel");
    assert.deepEqual(mill.statuses.get("x-1"), ["running", "success"]);
  });

  it("sends CancelAck at once and a CANCELLED terminal within the deadline, even when the run is slow to stop", async () => {
    const { mill, launcher } = await startExecutor();
    await runToCommit(mill, "c-1");
    const quick = await mill.cancel("c-1");
    assert.ok(quick.ackMs < 1_000, `CancelAck after ${quick.ackMs} ms`);
    assert.deepEqual(mill.statuses.get("c-1"), ["running", "cancelled"]);
    assert.deepEqual(launcher.runs.get("c-1")!.cancelReasons, ["workflow destroyed"]);
    launcher.stopsOnCancel = false;
    await runToCommit(mill, "c-2");
    const slow = await mill.cancel("c-2");
    assert.ok(slow.terminalMs >= 300 && slow.terminalMs < 10_000, `terminal after ${slow.terminalMs} ms`);
    assert.equal(mill.terminals.get("c-2")!.status, TERMINAL_STATUS.cancelled);
    assert.deepEqual([mill.violations, mill.failedByMill], [[], []]);
  });

  it("reconnects after the mill drops the socket mid-run and replays from the acknowledged seqno with no gap and no duplicate", async () => {
    const { mill, launcher, state } = await startExecutor();
    mill.ackEnabled = false;
    await runToCommit(mill, "d-1");
    await mill.waitFor(() => mill.statuses.get("d-1")?.length === 1, 20_000, "RUNNING");
    assert.equal(state.depth(), 1, "unacknowledged, the event stays in the outbox");
    mill.dropConnection();
    mill.ackEnabled = true;
    launcher.runs.get("d-1")!.finish({ status: "failed", exitCode: 3, error: "step 1 (test) failed with exit code 3" });
    await mill.waitFor(
      () => mill.connections === 2 && mill.terminals.get("d-1"),
      20_000,
      "the terminal after the reconnect",
    );
    assert.deepEqual(mill.statuses.get("d-1"), ["running", "failed"]);
    assert.equal(mill.terminals.get("d-1")!.exitCode, 3);
    const replayed = mill.received
      .filter((entry) => entry.connection === 2 && entry.message.kind === "eventBatch")
      .flatMap((entry) =>
        entry.message.kind === "eventBatch" ? entry.message.body.events.map((event) => event.seqno) : [],
      );
    assert.deepEqual(replayed, [2], "the acknowledged cursor was 1: only seqno 2 is sent again");
    await mill.waitFor(() => state.depth() === 0, 20_000, "the outbox trimmed by the ack");
    assert.deepEqual([mill.violations, mill.failedByMill], [[], []]);
  });

  it("restarts with the same epoch, replays its outbox, and ends a run it lost with exactly one failed runner-lost terminal", async () => {
    const first = await startExecutor();
    const { mill, dir } = first;
    mill.ackEnabled = false;
    await runToCommit(mill, "r-1");
    first.launcher.runs.get("r-1")!.line("before the crash");
    await mill.waitFor(() => mill.statuses.get("r-1")?.length === 1, 20_000, "RUNNING");
    await first.stop();
    mill.ackEnabled = true;
    const second = await startExecutor({ mill, dir });
    assert.equal(mill.messages("hello").at(-1)!.epoch, first.state.epoch);
    const terminal = await mill.waitFor(() => mill.terminals.get("r-1"), 20_000, "the lost run's terminal");
    assert.equal(terminal.status, TERMINAL_STATUS.failed);
    assert.match(terminal.error, /^runner-lost/);
    assert.deepEqual(mill.statuses.get("r-1"), ["running", "failed"]);
    assert.deepEqual(second.launcher.cleanedUp, [JSON.stringify({ leaseId: "r-1" })]);
    const stored = readFileSync(join(dir, "store", "logs", "r-1.log"), "utf8");
    assert.match(stored, /before the crash/);
    assert.deepEqual(mill.violations, []);
  });

  it("restarts and continues a run it left with a plan: resumed from its plan and checkpoint, its log cut to the checkpoint, one SUCCESS terminal, each line stored once", async () => {
    const first = await startExecutor();
    const { mill, dir } = first;
    mill.ackEnabled = false;
    await runToCommit(mill, "p-1");
    const run = first.launcher.runs.get("p-1")!;
    run.progress.plan('{"plan":"p-1"}');
    run.line("one");
    const atCheckpoint = run.logBytes();
    run.progress.checkpoint('{"checkpoint":"after one"}', atCheckpoint);
    run.line("two"); // logged after the checkpoint: the continued run logs it again
    await mill.waitFor(() => mill.liveLines("p-1").length === 2, 20_000, "the live lines");
    await first.stop();
    mill.ackEnabled = true;
    const second = await startExecutor({ mill, dir });
    assert.equal(mill.messages("hello").at(-1)!.epoch, first.state.epoch);
    const resumed = second.launcher.runs.get("p-1")!;
    assert.deepEqual(resumed.left, {
      leaseId: "p-1",
      record: JSON.stringify({ leaseId: "p-1" }),
      plan: '{"plan":"p-1"}',
      checkpoint: { text: '{"checkpoint":"after one"}', logLength: atCheckpoint },
    });
    assert.deepEqual(second.launcher.cleanedUp, [], "its Job is the run's: not deleted");
    resumed.line("two");
    resumed.line("three");
    resumed.finish({ status: "success", exitCode: 0, error: "" });
    const terminal = await mill.waitFor(() => mill.terminals.get("p-1"), 20_000, "the continued run's terminal");
    assert.equal(terminal.status, TERMINAL_STATUS.success);
    assert.deepEqual(mill.statuses.get("p-1"), ["running", "success"]);
    const stored = readFileSync(join(dir, "store", "logs", "p-1.log"), "utf8");
    assert.equal(terminal.logArtifact!.hash, `sha256:${createHash("sha256").update(stored).digest("hex")}`);
    assert.deepEqual(
      stored
        .trimEnd()
        .split("\n")
        .map((line) => (JSON.parse(line) as { content: string }).content),
      ["one", "two", "three"],
    );
    assert.deepEqual(second.state.listLeases(), []);
    assert.deepEqual(mill.violations, []);
  });

  it("keeps the lines a run printed after its checkpoint when the restart cannot continue it: one FAILED runner-lost terminal, no line lost", async () => {
    const first = await startExecutor();
    const { mill, dir } = first;
    await runToCommit(mill, "p-2");
    const run = first.launcher.runs.get("p-2")!;
    run.progress.plan('{"plan":"p-2"}');
    run.line("one");
    run.progress.checkpoint('{"checkpoint":"after one"}', run.logBytes());
    run.line("two");
    await mill.waitFor(() => mill.liveLines("p-2").length === 2, 20_000, "the live lines");
    await first.stop();
    const second = await startExecutor({ mill, dir });
    const resumed = second.launcher.runs.get("p-2")!;
    resumed.line("error: its pod is gone", -1);
    resumed.finish({ status: "failed", exitCode: -1, error: "runner-lost: the run's pod is gone" });
    const terminal = await mill.waitFor(() => mill.terminals.get("p-2"), 20_000, "the lost run's terminal");
    assert.equal(terminal.status, TERMINAL_STATUS.failed);
    assert.match(terminal.error, /^runner-lost: the run's pod is gone/);
    assert.deepEqual(mill.statuses.get("p-2"), ["running", "failed"]);
    const stored = readFileSync(join(dir, "store", "logs", "p-2.log"), "utf8");
    assert.deepEqual(
      stored
        .trimEnd()
        .split("\n")
        .map((line) => (JSON.parse(line) as { content: string }).content),
      ["one", "two", "error: its pod is gone"],
    );
    assert.deepEqual(mill.violations, []);
  });

  it("keeps a cancel the mill sent across a restart: the lease the restart finds is not continued, its Job is deleted and it ends with one CANCELLED terminal", async () => {
    const first = await startExecutor();
    const { mill, dir } = first;
    first.launcher.stopsOnCancel = false; // killed while the run was still stopping: no terminal yet
    await runToCommit(mill, "k-1");
    const run = first.launcher.runs.get("k-1")!;
    run.progress.plan('{"plan":"k-1"}');
    run.line("before the cancel");
    // Sent once, as a mill that took the CancelAck for the cancel's answer: it is not sent again after the restart.
    mill.send({ kind: "cancelAttempt", body: { leaseId: "k-1", reason: "workflow destroyed" } });
    await mill.waitFor(() => mill.messages("cancelAck").some((ack) => ack.leaseId === "k-1"), 5_000, "the CancelAck");
    await first.stop();
    assert.equal(mill.terminals.get("k-1"), undefined, "killed before the cancel's terminal");
    const second = await startExecutor({ mill, dir });
    const terminal = await mill.waitFor(() => mill.terminals.get("k-1"), 10_000, "the cancelled lease's terminal");
    assert.equal(terminal.status, TERMINAL_STATUS.cancelled);
    assert.match(terminal.error, /workflow destroyed/);
    assert.deepEqual(mill.statuses.get("k-1"), ["running", "cancelled"]);
    assert.equal(second.launcher.runs.has("k-1"), false, "not continued");
    assert.deepEqual(second.launcher.cleanedUp, [JSON.stringify({ leaseId: "k-1" })]);
    assert.match(readFileSync(join(dir, "store", "logs", "k-1.log"), "utf8"), /before the cancel/);
    assert.deepEqual(second.state.listLeases(), []);
    assert.deepEqual(mill.violations, []);
  });

  it("stores the log of a run that ended before a restart whose upload had not gone through, and sends its terminal once (a failing dir store)", async () => {
    const dir = makeTestTempDir("mill-session-");
    const failing: LogStore = { describe: "down", put: () => Promise.reject(new Error("503 Slow Down")) };
    const first = await startExecutor({ dir, logStore: failing });
    const { mill } = first;
    await runToCommit(mill, "up-1");
    first.launcher.runs.get("up-1")!.line("the run's only line");
    first.launcher.runs.get("up-1")!.finish({ status: "failed", exitCode: 3, error: "step 1 exited 3" });
    await mill.waitFor(
      () => first.warnings.some((warning) => /storing its log in down failed/.test(warning)),
      20_000,
      "a failed upload",
    );
    await first.stop();
    assert.equal(mill.terminals.get("up-1"), undefined, "no terminal before the log is stored");
    const second = await startExecutor({ dir, mill });
    const terminal = await mill.waitFor(() => mill.terminals.get("up-1"), 20_000, "the terminal after the restart");
    assert.equal(terminal.status, TERMINAL_STATUS.failed);
    assert.equal(terminal.exitCode, 3);
    const stored = readFileSync(join(dir, "store", "logs", "up-1.log"), "utf8");
    assert.match(stored, /the run's only line/);
    assert.equal(terminal.logArtifact!.hash, `sha256:${createHash("sha256").update(stored).digest("hex")}`);
    await mill.waitFor(() => second.state.depth() === 0, 20_000, "the outbox acknowledged");
    assert.deepEqual(mill.statuses.get("up-1"), ["running", "failed"], "one terminal");
    assert.deepEqual(second.launcher.runs.size, 0, "the run is not started again");
    assert.deepEqual(mill.violations, []);
  });

  it("uploads the log again and sends its terminal once when a restart came while the upload was under way (a dir store that stored and never answered)", async () => {
    const dir = makeTestTempDir("mill-session-");
    const real = createDirLogStore(join(dir, "store"));
    const hanging: LogStore = {
      describe: "hanging",
      put: async (leaseId, path) => {
        await real.put(leaseId, path);
        return new Promise(() => undefined); // killed before it answered: the terminal was never queued
      },
    };
    const first = await startExecutor({ dir, logStore: hanging });
    const { mill } = first;
    await runToCommit(mill, "up-2");
    first.launcher.runs.get("up-2")!.line("stored, but not yet answered");
    first.launcher.runs.get("up-2")!.finish({ status: "success", exitCode: 0, error: "" });
    await mill.waitFor(() => first.state.listLeases()[0]?.state === "finishing", 20_000, "the run finishing");
    await first.stop();
    assert.equal(mill.terminals.get("up-2"), undefined);
    const second = await startExecutor({ dir, mill });
    const terminal = await mill.waitFor(() => mill.terminals.get("up-2"), 20_000, "the terminal after the restart");
    assert.equal(terminal.status, TERMINAL_STATUS.success);
    const stored = readFileSync(join(dir, "store", "logs", "up-2.log"), "utf8");
    assert.match(stored, /stored, but not yet answered/);
    assert.equal(terminal.logArtifact!.hash, `sha256:${createHash("sha256").update(stored).digest("hex")}`);
    await mill.waitFor(() => second.state.depth() === 0, 20_000, "the outbox acknowledged");
    assert.deepEqual(mill.statuses.get("up-2"), ["running", "success"], "one terminal");
    assert.deepEqual(mill.violations, []);
  });

  it("dials again after a refused upgrade, backing off from the first wait doubling to the most, and says why", async () => {
    const dials: number[] = [];
    const server = createServer();
    server.on("upgrade", (_request, socket) => {
      dials.push(Date.now());
      socket.end("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
    const dir = makeTestTempDir("mill-backoff-");
    const state = new MillState(join(dir, "state"), { codec: await loadMillCodec() });
    const warnings: string[] = [];
    const session = new MillSession({
      url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/mill`,
      token: TOKEN,
      labels: [],
      arch: "amd64",
      maxRuns: 1,
      state,
      codec: await loadMillCodec(),
      launcher: new ScriptedLauncher(),
      logStore: createDirLogStore(join(dir, "store")),
      logDir: join(dir, "logs"),
      timings: { ...FAST, backoffMinMs: 150, backoffMaxMs: 600 },
      warn: (message) => warnings.push(message),
    });
    cleanups.push(async () => {
      await session.stop();
      state.close();
    });
    session.start();
    // The backoffs add up to 2.25 s; only a session that stops dialling misses this deadline.
    const deadline = Date.now() + 20_000;
    while ((dials.length < 6 || warnings.length < 5) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    assert.ok(dials.length >= 6, `dials: ${dials.length}`);
    // The waits it announces are exact; each gap holds its wait and then the next dial's latency, which a busy
    // machine stretches, so the gaps are bounded from below only.
    const expected = [150, 300, 600, 600, 600];
    const announced = warnings.slice(0, 5).map((warning) => Number(/dialling again in (\d+) ms/.exec(warning)?.[1]));
    assert.deepEqual(announced, expected, warnings.join("\n"));
    const gaps = dials.slice(1, 6).map((at, index) => at - dials[index]!);
    gaps.forEach((gap, index) =>
      assert.ok(
        gap >= expected[index]! - 10,
        `gap ${index + 1}: ${gap} ms, expected at least ${expected[index]} ms (all: ${gaps.join(", ")})`,
      ),
    );
    assert.match(warnings[0]!, /HTTP 401 \(token unknown, expired or quarantined\); dialling again in 150 ms/);
  });

  it("snapshots on its clock while idle, and lists a lease from its reservation until its terminal has gone out", async () => {
    const { mill, launcher } = await startExecutor();
    const first = mill.messages("nodeSnapshot").length;
    // Three more snapshots with nothing happening (snapshotMs is 300): a busy machine may make them late, so the wait is
    // bounded by a deadline only a session without the clock misses, and they are told from a burst by their spread.
    await mill.waitFor(() => mill.messages("nodeSnapshot").length >= first + 3, 20_000, "three idle snapshots");
    const idle = mill.received.filter((entry) => entry.message.kind === "nodeSnapshot").slice(first, first + 3);
    assert.ok(idle[2]!.at - idle[0]!.at >= 300, `three snapshots within ${idle[2]!.at - idle[0]!.at} ms`);
    await runToCommit(mill, "s-1");
    await mill.waitFor(
      () => mill.messages("nodeSnapshot").at(-1)!.activeLeaseIds.includes("s-1"),
      20_000,
      "a snapshot listing s-1",
    );
    launcher.runs.get("s-1")!.finish({ status: "success", exitCode: 0, error: "" });
    await mill.waitFor(() => mill.terminals.get("s-1"), 20_000, "the terminal");
    const terminalAt = mill.received.findIndex(
      (entry) => entry.message.kind === "eventBatch" && entry.message.body.events.some((event) => event.attemptResult),
    );
    const before = mill.received
      .slice(0, terminalAt)
      .filter((entry) => entry.message.kind === "nodeSnapshot")
      .at(-1)!;
    assert.ok(before.message.kind === "nodeSnapshot" && before.message.body.activeLeaseIds.includes("s-1"));
    await mill.waitFor(
      () => !mill.messages("nodeSnapshot").at(-1)!.activeLeaseIds.includes("s-1"),
      20_000,
      "a snapshot without s-1",
    );
    assert.deepEqual([mill.violations, mill.failedByMill], [[], []]);
  });

  it("ends the session on a malformed frame, an oversized one or a Message with no known field, and dials again", async () => {
    const { mill } = await startExecutor();
    mill.sendRaw(Buffer.from([0, 0, 0, 3, 0xff, 0xff, 0xff]));
    await mill.waitFor(() => mill.connections === 2 && mill.connected, 20_000, "the second connection");
    const oversized = Buffer.alloc(8);
    oversized.writeUInt32BE(9 * 1024 * 1024);
    mill.sendRaw(oversized);
    await mill.waitFor(() => mill.connections === 3 && mill.connected, 20_000, "the third connection");
    mill.sendRaw(Buffer.from([0, 0, 0, 2, 0x72, 0x00]));
    await mill.waitFor(() => mill.connections === 4 && mill.connected, 20_000, "the fourth connection");
    // An unknown field inside a known message is ignored: the cancel is handled on the same socket.
    const cancel = Buffer.from([0x0a, 0x01, 0x78, 0x48, 0x07]);
    const payload = Buffer.concat([Buffer.from([0x4a, cancel.length]), cancel]);
    const frame = Buffer.alloc(4);
    frame.writeUInt32BE(payload.length);
    mill.sendRaw(Buffer.concat([frame, payload]));
    await mill.waitFor(
      () => mill.messages("cancelAck").some((ack) => ack.leaseId === "x"),
      20_000,
      "the CancelAck of x",
    );
    assert.equal(mill.connections, 4);
  });

  it("closes on a malformed frame with 1002 and on a frame over the limit with 1009, saying why in the close's reason", async () => {
    const { mill } = await startExecutor();
    mill.sendRaw(Buffer.from([0, 0, 0, 3, 0xff, 0xff, 0xff]));
    await mill.waitFor(() => mill.connections === 2 && mill.connected, 20_000, "the second connection");
    const oversized = Buffer.alloc(8);
    oversized.writeUInt32BE(9 * 1024 * 1024);
    mill.sendRaw(oversized);
    await mill.waitFor(() => mill.messages("hello").length === 3, 20_000, "the third connection");
    assert.deepEqual(
      mill.closes.map((closed) => closed.code),
      [1002, 1009],
    );
    assert.match(mill.closes[0]!.reason, /^not a Message/);
    assert.match(mill.closes[1]!.reason, /over the 8388608-byte limit/);
  });

  it("stops while its handshake waits for Resume: the socket is closed and stop resolves", async () => {
    // A handshake bound far above the race's 20 s: a stop that waited for the handshake would lose the race whatever
    // the machine's load, one that closes the socket wins it.
    const { mill, session } = await startExecutor({ timings: { handshakeMs: 120_000 } });
    mill.holdResume = true;
    mill.dropConnection();
    await mill.waitFor(() => mill.messages("hello").length === 2, 20_000, "the second Hello");
    let waiting: NodeJS.Timeout | undefined;
    const stopped = await Promise.race([
      session.stop().then(() => "stopped"),
      new Promise((resolve) => (waiting = setTimeout(resolve, 20_000, "still waiting"))),
    ]);
    clearTimeout(waiting);
    assert.equal(stopped, "stopped");
    await mill.waitFor(() => !mill.connected, 20_000, "the socket closed");
  });

  it("with its outbox at the cap: reserves refused TRANSIENT, a commit's RUNNING dropped, every terminal still sent, reserves taken again once the mill acknowledges", async () => {
    const running = (await loadMillCodec()).eventSize({
      seqno: 1,
      leaseId: "o-1",
      statusEvent: { status: 1, error: "", exitCode: 0 },
    });
    // Room for exactly one RUNNING event (its protobuf bytes): after o-1's, the outbox is full until the mill acks.
    const { mill, launcher, warnings } = await startExecutor({ ack: false, maxRuns: 3, outboxCapBytes: running });
    assert.equal((await mill.reserve(offer("o-1"))).accepted, true);
    assert.equal((await mill.reserve(offer("o-2"))).accepted, true);
    assert.equal(await mill.commit("o-1"), "committed");
    await mill.waitFor(() => mill.statuses.get("o-1")?.length === 1, 20_000, "o-1's RUNNING");
    const refused = await mill.reserve(offer("o-3"));
    assert.deepEqual([refused.accepted, refused.rejectClass], [false, REJECT_CLASS.transient]);
    assert.match(refused.rejectReason, /^outbox full: \d+ bytes of events the mill has not acknowledged \(cap \d+\)$/);
    assert.equal(await mill.commit("o-2"), "committed");
    assert.ok(
      warnings.some((warning) => /^lease o-2: the outbox is past its cap .* RUNNING status is dropped/.test(warning)),
      warnings.join("\n"),
    );
    launcher.runs.get("o-2")!.finish({ status: "success", exitCode: 0, error: "" });
    launcher.runs.get("o-1")!.finish({ status: "failed", exitCode: 3, error: "step failed" });
    await mill.waitFor(() => mill.terminals.size === 2, 20_000, "both terminals");
    assert.deepEqual(mill.statuses.get("o-1"), ["running", "failed"]);
    assert.deepEqual(mill.statuses.get("o-2"), ["success"]);
    // The mill acknowledges at the next session's Resume: the outbox is trimmed and takes work again.
    mill.ackEnabled = true;
    mill.dropConnection();
    await mill.waitFor(
      () =>
        mill.connections === 2 &&
        mill.connected &&
        mill.received.some((r) => r.connection === 2 && r.message.kind === "nodeSnapshot"),
      20_000,
      "the second session's snapshot",
    );
    assert.equal((await mill.reserve(offer("o-3"))).accepted, true);
    assert.deepEqual([mill.violations, mill.failedByMill], [[], []]);
  });

  it("drops live lines while a slow mill's unsent bytes are past the bound, keeps them all in the stored log, and still sends the terminal", async () => {
    const { mill, launcher, dir, warnings } = await startExecutor({ liveLogBufferBytes: 64 * 1024 });
    await runToCommit(mill, "slow-1");
    mill.pauseReading();
    const run = launcher.runs.get("slow-1")!;
    const chunk = "x".repeat(16 * 1024);
    for (let i = 0; i < 1_000; i++) run.line(`${i} ${chunk}`);
    run.finish({ status: "success", exitCode: 0, error: "" });
    await new Promise((resolve) => setTimeout(resolve, 200));
    mill.resumeReading();
    const terminal = await mill.waitFor(() => mill.terminals.get("slow-1"), 20_000, "the terminal");
    assert.equal(terminal.status, TERMINAL_STATUS.success);
    const live = mill.liveLines("slow-1").length;
    assert.ok(live > 0 && live < 1_000, `${live} live lines of 1000`);
    const stored = readFileSync(join(dir, "store", "logs", "slow-1.log"), "utf8")
      .trim()
      .split("\n");
    assert.equal(stored.length, 1_000);
    assert.ok(
      warnings.some(
        (warning) => warning === `lease slow-1: ${1_000 - live} live lines dropped; its stored log has them all`,
      ),
      warnings.join("\n"),
    );
    assert.deepEqual([mill.violations, mill.failedByMill], [[], []]);
  });

  it("queues the terminal only once the log is stored, trying the store again until it takes it", async () => {
    const dir = makeTestTempDir("mill-session-");
    const real = createDirLogStore(join(dir, "store"));
    let failures = 2;
    const flaky: LogStore = {
      describe: "flaky",
      put: async (leaseId, path) =>
        failures-- > 0 ? Promise.reject(new Error("503 Slow Down")) : real.put(leaseId, path),
    };
    const { mill, launcher, warnings } = await startExecutor({ dir, logStore: flaky });
    await runToCommit(mill, "u-1");
    launcher.runs.get("u-1")!.finish({ status: "success", exitCode: 0, error: "" });
    const terminal = await mill.waitFor(() => mill.terminals.get("u-1"), 20_000, "the terminal");
    assert.equal(terminal.logArtifact!.ref, "logs/u-1.log");
    assert.equal(
      warnings.filter((warning) => /storing its log in flaky failed: 503 Slow Down/.test(warning)).length,
      2,
    );
    assert.ok(
      mill.messages("nodeSnapshot").some((snapshot) => snapshot.activeLeaseIds.includes("u-1")),
      "listed while its log was being stored",
    );
    assert.deepEqual(mill.failedByMill, []);
  });

  it("drains on request: new reserves TRANSIENT, a run past the drain timeout cancelled, every terminal queued", async () => {
    const { mill, session, launcher } = await startExecutor();
    await runToCommit(mill, "t-1");
    launcher.stopsOnCancel = true;
    const drained = session.drain(300);
    const late = await mill.reserve(offer("t-2"));
    assert.deepEqual([late.accepted, late.rejectClass], [false, REJECT_CLASS.transient]);
    await drained;
    await mill.waitFor(() => mill.terminals.get("t-1"), 20_000, "the drained run's terminal");
    assert.deepEqual(mill.statuses.get("t-1"), ["running", "cancelled"]);
  });
});
