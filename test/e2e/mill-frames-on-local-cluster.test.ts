// The mill executor as its own process against a stand-in mill that drops the socket mid-run, sends bad frames mid-run and reconciles snapshots after a reconnect, with the runs as Jobs on the local cluster.
import assert from "node:assert/strict";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { TERMINAL_STATUS } from "../../src/mill/mill-messages.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason, waitUntil } from "../support/local-cluster-e2e.js";
import { BUSYBOX, offer, startExecutor, step, type ExecutorProcess } from "../support/mill-e2e.js";
import { StandInMill } from "../support/stand-in-mill.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const skip = findPodmanSkipReason();
const KUBECTL = E2E_KUBECTLS.at(-1) ?? "kubectl";
const TOKEN = "e2e-mill-frames-token";
const MIB = 1024 * 1024;

/** A step printing `tick 1` to `tick <count>`, one a second. */
const ticks = (count: number) => step("tick", `for i in $(seq 1 ${count}); do echo tick $i; sleep 1; done`);

/** A protobuf varint. */
function varint(value: number): Buffer {
  const bytes: number[] = [];
  for (let rest = value; ; rest = Math.floor(rest / 128)) {
    if (rest < 128) {
      bytes.push(rest);
      return Buffer.from(bytes);
    }
    bytes.push((rest % 128) | 128);
  }
}

/** A length-delimited protobuf field. */
const field = (number: number, body: Buffer) => Buffer.concat([varint((number << 3) | 2), varint(body.length), body]);

/** A 4-byte big-endian length, then `payload`. */
function frame(payload: Buffer, announced = payload.length): Buffer {
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32BE(announced);
  return Buffer.concat([prefix, payload]);
}

describe("the mill executor's session faults on the local cluster", { skip, concurrency: 1, timeout: 900_000 }, () => {
  let cluster: LocalCluster;
  let mill: StandInMill;
  let executor: ExecutorProcess;
  const dir = makeTestTempDir("mill-frames-e2e-");
  const storeDir = join(dir, "store");
  const tokenFile = join(dir, "token");
  const configFile = join(dir, "config.yml");
  writeFileSync(tokenFile, `${TOKEN}\n`);
  chmodSync(tokenFile, 0o600);
  writeFileSync(configFile, `engines:\n  microvm:\n    images:\n      alpine: ${BUSYBOX}\n    defaultImage: alpine\n`);
  const args = () => [
    ...["--mill", mill.url, "--insecure-mill", "--token-file", tokenFile, "--state-dir", join(dir, "state")],
    ...["--log-store", storeDir, "--labels", "k8s", "--max-runs", "3", "--config", configFile],
    ...["--kubeconfig", cluster.kubeconfigPath, "--kubectl", KUBECTL, "--skip-warm"],
  ];
  /** Resolves once connection `connection` is up and has sent its first snapshot. */
  const connected = (connection: number) =>
    mill.waitFor(
      () =>
        mill.connections >= connection &&
        mill.connected &&
        mill.received.some((entry) => entry.connection === connection && entry.message.kind === "nodeSnapshot"),
      30_000,
      `connection ${connection}'s first snapshot`,
    );
  const liveContents = (leaseId: string, connection?: number) =>
    mill.received.flatMap((entry) =>
      entry.message.kind === "liveLog" &&
      entry.message.body.leaseId === leaseId &&
      (connection === undefined || entry.connection === connection)
        ? [
            String(
              (JSON.parse(Buffer.from(entry.message.body.rawJson).toString("utf8")) as { content: unknown }).content,
            ),
          ]
        : [],
    );
  const sawLine = (leaseId: string, content: string) =>
    mill.waitFor(() => liveContents(leaseId).includes(content), 300_000, `${leaseId}'s line ${content}`);
  const storedLog = (leaseId: string) => join(storeDir, "logs", `${leaseId}.log`);
  /** The run's Job and pod are gone, and the mill saw no rule broken. */
  const assertCleanEnd = async () => {
    await waitUntil("the runs' Jobs gone", () => cluster.objects("jobs.batch").length === 0, 60_000);
    await assertNothingLeft(cluster);
    assert.deepEqual(
      { violations: mill.violations, failed: mill.failedByMill, cancelled: mill.cancelledByMill },
      { violations: [], failed: [], cancelled: [] },
      executor.output(),
    );
    assert.deepEqual(mill.foreignListed, [], "a snapshot listed a lease the mill does not hold");
    const applied = mill.applied;
    assert.deepEqual(
      applied,
      applied.map((_, index) => index + 1),
      "every seqno applied once, densely from 1",
    );
    assert.equal(executor.child.exitCode, null, "the executor is still running");
  };

  before(async () => {
    [cluster, mill] = await Promise.all([
      startLocalCluster({ imageBackOffSeconds: 1 }),
      StandInMill.start({ token: TOKEN }),
    ]);
    executor = await startExecutor(args());
    await connected(1);
  });
  after(async () => {
    if (executor) {
      executor.child.kill("SIGTERM");
      assert.equal(await executor.exited, 0, executor.output());
    }
    await mill?.close();
    if (cluster) await assertNothingLeft(cluster);
    await cluster?.stop();
  });

  it("reconnects with backoff after the mill drops the socket mid-step, replays from the acknowledged seqno with no gap and no duplicate, sends live lines again, and ends the run with exactly one terminal", async () => {
    mill.ackEnabled = false;
    assert.equal((await mill.reserve(offer("3kxdrop-1", ticks(45)))).accepted, true);
    assert.equal(
      (await mill.reserve(offer("3kxdrop-2", step("short", "echo waiting; sleep 6; echo done")))).accepted,
      true,
    );
    assert.equal(await mill.commit("3kxdrop-1"), "committed");
    assert.equal(await mill.commit("3kxdrop-2"), "committed");
    await Promise.all([sawLine("3kxdrop-1", "tick 2"), sawLine("3kxdrop-2", "waiting")]);
    // The mill stops reading: 3kxdrop-2's terminal goes out on a socket the mill then drops unread, as a cut would lose it.
    mill.pauseReading();
    await waitUntil(
      "3kxdrop-2's log stored and its terminal queued",
      () => existsSync(storedLog("3kxdrop-2")),
      120_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(mill.terminals.get("3kxdrop-2"), undefined, "the terminal was not read before the drop");
    const cursor = mill.cursors.get(mill.messages("hello").at(-1)!.epoch)!;
    assert.ok(cursor >= 2, `both RUNNING applied, unacknowledged (cursor ${cursor})`);
    const connection = mill.connections;
    const droppedAt = Date.now();
    mill.dropConnection();
    mill.ackEnabled = true;
    await connected(connection + 1);
    const helloAt = mill.received.find((entry) => entry.connection === connection + 1)!.at;
    assert.ok(helloAt - droppedAt >= 200, `dialled again after ${helloAt - droppedAt} ms, within the 200 ms backoff`);
    assert.match(executor.output(), /mill session ended: .*; dialling again in \d+ ms/);
    assert.deepEqual(mill.resumes.at(-1), { connection: connection + 1, ackSeqno: cursor });
    const resent = mill.received.flatMap((entry) =>
      entry.connection === connection + 1 && entry.message.kind === "eventBatch"
        ? entry.message.body.events.map((event) => event.seqno)
        : [],
    );
    assert.equal(resent[0], cursor + 1, "the replay starts past the acknowledged seqno");
    assert.deepEqual(mill.replayed, [], "nothing at or below the cursor was sent again");
    assert.deepEqual(mill.statuses.get("3kxdrop-2"), ["running", "success"]);
    // LiveLog is neither sequenced nor replayed: lines written while the socket was down are lost to the live view
    // (the stored log keeps them), and the lines go on over the new socket.
    await mill.waitFor(() => liveContents("3kxdrop-1", connection + 1).length >= 2, 30_000, "live lines again");
    const terminal = await mill.waitFor(() => mill.terminals.get("3kxdrop-1"), 120_000, "3kxdrop-1's terminal");
    assert.equal(terminal.status, TERMINAL_STATUS.success, terminal.error);
    assert.deepEqual(mill.statuses.get("3kxdrop-1"), ["running", "success"]);
    const stored = readFileSync(storedLog("3kxdrop-1"), "utf8");
    const storedTicks = [...stored.matchAll(/"content":"(tick \d+)"/g)].map((match) => match[1]);
    assert.deepEqual(
      storedTicks,
      Array.from({ length: 45 }, (_, index) => `tick ${index + 1}`),
    );
    const liveTicks = liveContents("3kxdrop-1").filter((content) => content.startsWith("tick "));
    assert.deepEqual(
      liveTicks,
      storedTicks.filter((tick) => liveTicks.includes(tick!)),
      "live lines in order, none twice",
    );
    assert.ok(liveTicks.length < 45, "the lines written during the drop were not sent live");
    await assertCleanEnd();
  });

  it("mid-run, ignores an unknown field, ends the session on a malformed frame, a Message with no known field and a frame over 8 MiB (close codes 1002, 1002, 1009), dials again each time, and the run ends with exactly one terminal", async () => {
    assert.equal((await mill.reserve(offer("3kxframe-1", ticks(40)))).accepted, true);
    assert.equal(await mill.commit("3kxframe-1"), "committed");
    await sawLine("3kxframe-1", "tick 2");
    const first = mill.connections;
    // A repeat CommitLease with an unknown field inside it and one beside it: protobuf skips both; Committed again.
    const commit = Buffer.concat([field(1, Buffer.from("3kxframe-1")), varint((9 << 3) | 0), varint(7)]);
    const before = mill.received.length;
    mill.sendRaw(frame(Buffer.concat([field(6, commit), varint((99 << 3) | 0), varint(1)])));
    await mill.waitFor(
      () => mill.received.slice(before).some((entry) => entry.message.kind === "committed"),
      10_000,
      "Committed for the repeat",
    );
    assert.equal(mill.connections, first, "an unknown field does not end the session");
    const badFrames: Array<[string, Buffer[]]> = [
      ["malformed", [frame(Buffer.from([0xff, 0xff, 0xff]))]],
      ["no known field", [frame(Buffer.concat([varint((99 << 3) | 0), varint(1)]))]],
      ["oversized, in one message", [frame(Buffer.alloc(9 * MIB))]],
      ["oversized, split", [frame(Buffer.alloc(4 * MIB), 9 * MIB), Buffer.alloc(5 * MIB)]],
    ];
    for (const [index, [what, parts]] of badFrames.entries()) {
      for (const part of parts) mill.sendRaw(part);
      await connected(first + index + 1).catch((error: Error) => {
        throw new Error(`after the ${what} frame: ${error.message}\n${executor.output()}`);
      });
    }
    assert.deepEqual(
      mill.closes.filter((closed) => closed.connection >= first).map((closed) => closed.code),
      [1002, 1002, 1009, 1009],
      JSON.stringify(mill.closes),
    );
    await mill.waitFor(() => liveContents("3kxframe-1", mill.connections).length >= 2, 30_000, "live lines again");
    const terminal = await mill.waitFor(() => mill.terminals.get("3kxframe-1"), 120_000, "the terminal");
    assert.equal(terminal.status, TERMINAL_STATUS.success, terminal.error);
    assert.deepEqual(mill.statuses.get("3kxframe-1"), ["running", "success"]);
    await assertCleanEnd();
  });

  it("after a reconnect, snapshots list a reservation and a running lease, a lease that finished while disconnected has its terminal sent first, and a cancel re-sent on the new socket ends the run within the deadline", async () => {
    assert.equal((await mill.reserve(offer("3kxsnap-r", ticks(1)))).accepted, true);
    assert.equal((await mill.reserve(offer("3kxsnap-l", ticks(60)))).accepted, true);
    assert.equal((await mill.reserve(offer("3kxsnap-f", step("short", "echo fast; sleep 4")))).accepted, true);
    assert.equal(await mill.commit("3kxsnap-l"), "committed");
    assert.equal(await mill.commit("3kxsnap-f"), "committed");
    await Promise.all([sawLine("3kxsnap-l", "tick 2"), sawLine("3kxsnap-f", "fast")]);
    const connection = mill.connections;
    mill.refusing = true;
    mill.dropConnection();
    await waitUntil("3kxsnap-f's log stored while disconnected", () => existsSync(storedLog("3kxsnap-f")), 120_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    mill.refusing = false;
    await connected(connection + 1);
    const onNew = mill.received.filter((entry) => entry.connection === connection + 1);
    const snapshotAt = onNew.findIndex((entry) => entry.message.kind === "nodeSnapshot");
    const snapshot = onNew[snapshotAt]!.message;
    assert.ok(snapshot.kind === "nodeSnapshot");
    assert.deepEqual([...snapshot.body.activeLeaseIds].sort(), ["3kxsnap-l", "3kxsnap-r"]);
    const terminalAt = onNew.findIndex(
      (entry) =>
        entry.message.kind === "eventBatch" &&
        entry.message.body.events.some((event) => event.leaseId === "3kxsnap-f" && event.attemptResult),
    );
    assert.ok(terminalAt >= 0 && terminalAt < snapshotAt, "3kxsnap-f's terminal went out ahead of the snapshot");
    assert.deepEqual(mill.statuses.get("3kxsnap-f"), ["running", "success"]);
    mill.release("3kxsnap-r");
    // The CancelAttempt may be lost with the socket: the mill sends it again after the next Resume, and its deadline runs on.
    const cancelled = mill.cancel("3kxsnap-l");
    mill.dropConnection();
    const timing = await cancelled;
    assert.ok(timing.terminalMs < 10_000, `terminal after ${timing.terminalMs} ms`);
    assert.deepEqual(mill.statuses.get("3kxsnap-l"), ["running", "cancelled"]);
    await mill.waitFor(
      () => mill.connected && mill.messages("nodeSnapshot").at(-1)!.activeLeaseIds.length === 0,
      10_000,
      "a snapshot listing nothing",
    );
    await assertCleanEnd();
  });
});
