// Tests of running one step in the pod: framed output as events, exit codes, resuming a dropped stream, the deadline.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CancelledError } from "../../../src/core/errors.js";
import { runStep } from "../../../src/executor/kubernetes/run-step.js";
import type { RecordedCall, ScriptedReply } from "../../support/scripted-kubectl.js";
import { NODE_NAME, POD_NAME, UPGRADE_REFUSED, failure, podList, runningPod } from "./cluster-objects.js";
import { buildTestContext } from "./test-context.js";
import { isInfraError } from "../../support/infra-error.js";
import { driveClock, mockClock } from "../../support/mock-clock.js";

const POD = { name: POD_NAME, node: NODE_NAME };
const FAR = (): number => Date.now() + 60_000;
/** A deadline the scripted exec has relayed its frames by: on the mocked clock, it passes only once they are relayed. */
const RELAYED_BY_MS = 1_000;
const STREAM_CUT =
  "error: error reading from error stream: read tcp 10.0.0.2:5->10.0.0.1:443: read: connection reset by peer";

/** The helper's follow frames (src/pod/follow-frames.ts). */
const frame = {
  out: (data: string | Buffer) => Buffer.concat([Buffer.from(`O ${Buffer.byteLength(data)}\n`), Buffer.from(data)]),
  err: (data: string) => `E ${Buffer.byteLength(data)}\n${data}`,
  exit: (code: number) => `X ${code}\n`,
};

/** The helper command an exec ran: `["run", "0"]`, `["follow", "0", "3", "0"]`, `["kill", "0", "1"]`. */
function helperArgs(call: RecordedCall | undefined): readonly string[] {
  assert.ok(call, "no such call");
  const at = call.args.indexOf("/knotless/helper.sh");
  return call.args.slice(at + 1);
}

function outputOf(events: ReturnType<typeof buildTestContext>["events"], stream: "stdout" | "stderr"): string[] {
  return events.flatMap((e) => (e.kind === "step-output" && e.stream === stream ? [e.text] : []));
}

describe("runStep", { concurrency: true }, () => {
  it("streams the step's output as events and succeeds when the step exits 0", async () => {
    const { ctx, kubectl, events } = buildTestContext();
    kubectl.on("exec", {
      stdout: [frame.out("hello\n"), frame.err("warn\n"), "H\n", frame.out("bye\n"), frame.exit(0)],
    });
    assert.deepEqual(await runStep(ctx, POD, 1, FAR()), { status: "success", exitCode: 0, timedOut: false });
    assert.deepEqual(kubectl.calls[0]?.args, [
      "--kubeconfig",
      "/tmp/kubeconfig",
      "--context",
      "ctx",
      "--namespace",
      "ci",
      "exec",
      "-i",
      POD_NAME,
      "-c",
      "run",
      "--",
      "sh",
      "/knotless/helper.sh",
      "run",
      "1",
    ]);
    assert.equal(kubectl.calls[0]?.stdin, "", "stdin is held open and nothing is written to it");
    assert.deepEqual(outputOf(events, "stdout"), ["hello\n", "bye\n"]);
    assert.deepEqual(outputOf(events, "stderr"), ["warn\n"]);
    assert.ok(events.every((e) => e.kind !== "step-output" || e.index === 1));
  });

  it("says once in the log how much of a stream the pod dropped past its bound, even when a reconnect says it again", async () => {
    const { ctx, kubectl, events, eventsOf } = buildTestContext({ settings: { maxLogBytes: 4 } });
    kubectl.on("exec", [
      { stdout: [frame.out("abcd"), "D O 96\n"], stderr: `${STREAM_CUT}\n`, exitCode: 1 },
      { stdout: ["D O 96\nD E ?\n", frame.exit(0)] },
    ]);
    kubectl.on("get pods", podList(runningPod()));
    assert.deepEqual(await runStep(ctx, POD, 2, FAR()), { status: "success", exitCode: 0, timedOut: false });
    assert.deepEqual(outputOf(events, "stdout"), ["abcd"]);
    const drops = eventsOf("notice").filter((n) => n.message.includes("output bound"));
    assert.deepEqual(
      drops.map((n) => [n.level, n.message]),
      [
        [
          "warning",
          "step 3's stdout passed the pod's output bound of 4 bytes (--max-log-bytes): 96 more bytes were dropped in the pod, written to no file and no log (the step went on running); result.json's logs.droppedBytes counts them",
        ],
        [
          "warning",
          "step 3's stderr passed the pod's output bound of 4 bytes (--max-log-bytes): the rest of it was dropped in the pod (uncounted: the step was stopped first), written to no file and no log (the step went on running); result.json's logs.droppedBytes counts them",
        ],
      ],
    );
    assert.deepEqual(
      drops.map((n) => n.podDroppedBytes),
      [96, undefined],
      "a counted drop carries its bytes for the run's log counts",
    );
  });

  it("fails with the step's exit code when the step exits 3", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", { stdout: [frame.err("boom\n"), frame.exit(3)] });
    assert.deepEqual(await runStep(ctx, POD, 0, FAR()), { status: "failed", exitCode: 3, timedOut: false });
    assert.equal(kubectl.calls.length, 1);
  });

  it("keeps a UTF-8 character whole when its bytes arrive in two chunks", async () => {
    const { ctx, kubectl, events } = buildTestContext();
    const e = Buffer.from("é");
    kubectl.on("exec", {
      stdout: [
        Buffer.concat([Buffer.from("O 3\n"), e.subarray(0, 1)]),
        Buffer.concat([e.subarray(1), Buffer.from("!"), Buffer.from(frame.exit(0))]),
      ],
    });
    await runStep(ctx, POD, 0, FAR());
    assert.equal(outputOf(events, "stdout").join(""), "é!");
    assert.ok(outputOf(events, "stdout").every((text) => !text.includes("\uFFFD")));
  });

  it("reconnects with follow from the byte offsets it has when the stream drops, and says so", async () => {
    const { ctx, kubectl, events, eventsOf } = buildTestContext();
    kubectl.on("exec", [
      { stdout: [frame.out("abc"), frame.err("e")], stderr: `${STREAM_CUT}\n`, exitCode: 1 },
      { stdout: [frame.out("de"), frame.exit(0)] },
    ]);
    kubectl.on("get pods", podList(runningPod()));
    assert.deepEqual(await runStep(ctx, POD, 0, FAR()), { status: "success", exitCode: 0, timedOut: false });
    const execs = kubectl.callsTo("exec");
    assert.deepEqual(execs.map(helperArgs), [
      ["run", "0"],
      ["follow", "0", "3", "1"],
    ]);
    assert.equal(kubectl.callsTo("get pods").length, 1, "a dropped stream makes it check the pod");
    assert.deepEqual(outputOf(events, "stdout"), ["abc", "de"]);
    const [notice] = eventsOf("notice");
    assert.equal(notice?.level, "warning");
    assert.match(
      notice?.message ?? "",
      /^step 1 \(build\): the exec stream ended without the step's exit code \(kubectl exit 1: .*connection reset by peer\); reconnecting at byte 3\/1/,
    );
  });

  it("runs the step again when the helper, asked to follow it, says it had not started", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", [failure(STREAM_CUT), { stdout: "N\n" }, { stdout: [frame.out("ok\n"), frame.exit(0)] }]);
    kubectl.on("get pods", podList(runningPod()));
    assert.equal((await runStep(ctx, POD, 2, FAR())).status, "success");
    assert.deepEqual(kubectl.callsTo("exec").map(helperArgs), [
      ["run", "2"],
      ["follow", "2", "0", "0"],
      ["run", "2"],
    ]);
  });

  it("keeps reconnecting past the attempt limit while every dropped stream delivered output", async () => {
    const { ctx, kubectl, events } = buildTestContext();
    const cutAfterOutput: ScriptedReply = { stdout: frame.out("x"), stderr: `${STREAM_CUT}\n`, exitCode: 1 };
    kubectl.on("exec", [...Array<ScriptedReply>(7).fill(cutAfterOutput), { stdout: frame.exit(0) }]);
    kubectl.on("get pods", podList(runningPod()));
    assert.equal((await runStep(ctx, POD, 0, FAR())).status, "success");
    assert.equal(kubectl.callsTo("exec").length, 8);
    assert.equal(outputOf(events, "stdout").join(""), "xxxxxxx");
  });

  it("passes on the bytes of an incomplete UTF-8 sequence the step's output ends with", async () => {
    const { ctx, kubectl, events } = buildTestContext();
    kubectl.on("exec", { stdout: [frame.out(Buffer.from([0x6f, 0x6b, 0xc3])), frame.exit(0)] });
    await runStep(ctx, POD, 0, FAR());
    assert.equal(outputOf(events, "stdout").join(""), "ok\uFFFD");
  });

  it("runs the step again while the node refuses the exec upgrade, without checking the pod", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", [failure(UPGRADE_REFUSED), { stdout: frame.exit(0) }]);
    assert.equal((await runStep(ctx, POD, 0, FAR())).status, "success");
    assert.deepEqual(kubectl.callsTo("exec").map(helperArgs), [
      ["run", "0"],
      ["run", "0"],
    ]);
    assert.deepEqual(kubectl.callsTo("get pods"), []);
  });

  it("fails with pod-lost when the stream drops and the pod is gone", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", { stdout: frame.out("partial"), stderr: `${STREAM_CUT}\n`, exitCode: 1 });
    kubectl.on("get pods", podList());
    await assert.rejects(runStep(ctx, POD, 0, FAR()), isInfraError("pod-lost", /is gone/));
    assert.equal(kubectl.callsTo("exec").length, 1);
  });

  it("gives up with exec-no-exit-code when reconnects keep ending without output or exit code", async () => {
    const { ctx, kubectl, eventsOf } = buildTestContext();
    kubectl.on("exec", failure(STREAM_CUT));
    kubectl.on("get pods", podList(runningPod()));
    await assert.rejects(
      runStep(ctx, POD, 0, FAR()),
      isInfraError(
        "exec-no-exit-code",
        /^step 1 \(build\): the exec kept ending without the step's exit code \(gave up after \d+ attempts in [0-9.]+s\); last: kubectl exit 1: .*connection reset by peer/,
      ),
    );
    const execs = kubectl.callsTo("exec");
    assert.equal(execs.length, 6);
    assert.deepEqual(execs.slice(1).map(helperArgs), Array(5).fill(["follow", "0", "0", "0"]));
    assert.equal(eventsOf("notice").length, 5);
  });

  it("fails with pod-lost, not exec-no-exit-code, when the pod's status says it ended only after the reconnects gave up", async () => {
    const { ctx, kubectl } = buildTestContext({ timings: { podEndLagMs: 50 } });
    kubectl.on("exec", failure(STREAM_CUT));
    // One look after each of the six cut follows sees it Running (an evicted pod's status lags its containers' end).
    kubectl.on("get pods", (_call, n) => (n <= 6 ? podList(runningPod()) : podList()));
    await assert.rejects(runStep(ctx, POD, 0, FAR()), isInfraError("pod-lost", /is gone/));
    assert.equal(kubectl.callsTo("exec").length, 6);
  });

  it("bounds the read after the kill: a follow that never ends is stopped, with a warning, and the timeout reported", async () => {
    const { ctx, kubectl, eventsOf } = buildTestContext({ timings: { timedOutOutputMs: 150 } });
    kubectl.on("exec", { hang: true }, (call) => helperArgs(call)[0] === "run");
    kubectl.on("exec", { stdout: "stopped 0\n" }, (call) => helperArgs(call)[0] === "kill");
    kubectl.on("exec", { hang: true }, (call) => helperArgs(call)[0] === "follow");
    assert.deepEqual(await runStep(ctx, POD, 0, Date.now() + 100), {
      status: "timeout",
      exitCode: null,
      timedOut: true,
    });
    const follow = kubectl.calls.find((call) => helperArgs(call)[0] === "follow");
    assert.deepEqual(follow?.killSignals, ["SIGTERM"]);
    assert.match(eventsOf("notice")[0]?.message ?? "", /could not be read \(no end after 150 ms\)$/);
  });

  it("runs the kill again when its exec ended without the pod's confirmation, then reports the timeout", async () => {
    const { ctx, kubectl, eventsOf } = buildTestContext();
    kubectl.on("exec", { hang: true }, (call) => helperArgs(call)[0] === "run");
    kubectl.on("exec", [{}, { stdout: "stopped 0\n" }], (call) => helperArgs(call)[0] === "kill");
    assert.deepEqual(await runStep(ctx, POD, 0, Date.now() + 100), {
      status: "timeout",
      exitCode: null,
      timedOut: true,
    });
    assert.equal(kubectl.calls.filter((call) => helperArgs(call)[0] === "kill").length, 2);
    assert.match(
      eventsOf("notice")[0]?.message ?? "",
      /the kill in the pod was not confirmed \(the kill exec ended without a word from the pod\)/,
    );
  });

  it("fails with exec-failed when the step's processes can never be confirmed stopped", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", { hang: true }, (call) => helperArgs(call)[0] === "run");
    kubectl.on("exec", {}, (call) => helperArgs(call)[0] === "kill");
    await assert.rejects(
      runStep(ctx, POD, 0, Date.now() + 100),
      isInfraError(
        "exec-failed",
        /step 1 \(build\) timed out and its processes in the pod could not be confirmed stopped/,
      ),
    );
    assert.equal(kubectl.calls.filter((call) => helperArgs(call)[0] === "kill").length, 3);
  });

  it("fails with exec-failed when the step was killed in the pod by someone else", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", { stdout: [frame.out("x"), "K\n"] });
    await assert.rejects(
      runStep(ctx, POD, 0, FAR()),
      isInfraError("exec-failed", /step 1 \(build\) was killed in the pod by someone else/),
    );
  });

  // The step's deadline is an hour away, so only the runner itself can end these kubectl processes.
  it("fails with exec-failed and ends kubectl when the output stream is corrupt", { timeout: 30_000 }, async (t) => {
    const { ctx, kubectl, cancel } = buildTestContext();
    t.after(cancel); // should it hang, the cancel ends it and its hour-long timer
    kubectl.on("exec", { stdout: "this is not a frame\n", hang: true });
    await assert.rejects(
      runStep(ctx, POD, 0, Date.now() + 3_600_000),
      isInfraError("exec-failed", /the step's output stream is corrupt: unexpected frame header/),
    );
    assert.deepEqual(kubectl.calls[0]?.killSignals, ["SIGTERM"]);
  });

  it("ends a kubectl that lingers after the step's exit code arrived", async (t) => {
    const { ctx, kubectl, cancel } = buildTestContext();
    t.after(cancel);
    kubectl.on("exec", { stdout: [frame.out("done\n"), frame.exit(0)], hang: true });
    assert.deepEqual(await runStep(ctx, POD, 0, Date.now() + 3_600_000), {
      status: "success",
      exitCode: 0,
      timedOut: false,
    });
    assert.deepEqual(kubectl.calls[0]?.killSignals, ["SIGTERM"]);
  });

  it("ends its exec and stops the step's processes in the pod when the run is cancelled mid-step, then rejects with CancelledError", async () => {
    const { ctx, kubectl, cancel, eventsOf } = buildTestContext();
    kubectl.on("exec", { stdout: "stopped 0\n" }, (call) => helperArgs(call)[0] === "kill");
    kubectl.on("exec", () => (setImmediate(cancel), { stdout: frame.out("a"), hang: true }));
    await assert.rejects(runStep(ctx, POD, 0, FAR()), CancelledError);
    assert.deepEqual(kubectl.calls[0]?.killSignals, ["SIGTERM"]);
    assert.deepEqual(kubectl.calls.map(helperArgs), [
      ["run", "0"],
      ["kill", "0", "1"],
    ]);
    assert.ok(eventsOf("notice").some((n) => n.message === "step 1 (build): its processes in the pod are stopped"));
  });

  it("still rejects with CancelledError, with a warning, when a cancelled step's processes cannot be confirmed stopped", async () => {
    const { ctx, kubectl, cancel, eventsOf } = buildTestContext();
    kubectl.on("exec", { stdout: "" }, (call) => helperArgs(call)[0] === "kill"); // swallowed: no confirmation
    kubectl.on("exec", () => (setImmediate(cancel), { hang: true }));
    await assert.rejects(runStep(ctx, POD, 0, FAR()), CancelledError);
    assert.ok(
      kubectl.callsTo("exec").filter((call) => helperArgs(call)[0] === "kill").length >= 2,
      "the kill is tried again",
    );
    assert.ok(
      eventsOf("notice").some(
        (n) => n.level === "warning" && /could not be confirmed stopped after the cancel/.test(n.message),
      ),
    );
  });

  it("gives up stopping a cancelled step once the clean-up's time is over", async () => {
    const cleanup = new AbortController();
    const { ctx, kubectl, cancel } = buildTestContext();
    const bounded = { ...ctx, cleanupSignal: () => cleanup.signal };
    kubectl.on(
      "exec",
      () => (setImmediate(() => cleanup.abort()), { hang: true }),
      (call) => helperArgs(call)[0] === "kill",
    );
    kubectl.on("exec", () => (setImmediate(cancel), { hang: true }));
    await assert.rejects(runStep(bounded, POD, 0, FAR()), CancelledError);
    const kill = kubectl.callsTo("exec").find((call) => helperArgs(call)[0] === "kill");
    assert.deepEqual(kill?.killSignals, ["SIGTERM"], "the kill exec was ended by the clean-up's bound");
  });

  it("fails with unauthorized, without reconnecting, when the credential stops being accepted", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("exec", [failure(STREAM_CUT), failure("error: You must be logged in to the server (Unauthorized)")]);
    kubectl.on("get pods", podList(runningPod()));
    await assert.rejects(
      runStep(ctx, POD, 0, FAR()),
      isInfraError("unauthorized", /^step 1 \(build\): error: You must be logged in/),
    );
    assert.equal(kubectl.callsTo("exec").length, 2);
  });
});

// The timeouts whose output must be relayed before the deadline, on a mocked clock: one at a time, as the mock is global.
describe("runStep on a mocked clock", () => {
  it("stops the step's processes at the deadline, then reads the output the ended stream had not relayed, and reports a timeout", async (t) => {
    mockClock(t);
    const { ctx, kubectl, events, eventsOf } = buildTestContext({ timings: { killGraceSeconds: 7 } });
    const execRun: ScriptedReply = { stdout: frame.out("working\n"), hang: true };
    kubectl.on("exec", execRun, (call) => helperArgs(call)[0] === "run");
    kubectl.on("exec", { stdout: "stopped 0\n" }, (call) => helperArgs(call)[0] === "kill");
    kubectl.on(
      "exec",
      { stdout: [frame.out("stuck here\n"), frame.err("last error\n"), "K\n"] },
      (call) => helperArgs(call)[0] === "follow",
    );
    assert.deepEqual(await driveClock(t, runStep(ctx, POD, 0, Date.now() + RELAYED_BY_MS)), {
      status: "timeout",
      exitCode: null,
      timedOut: true,
    });
    const [run, kill, follow] = kubectl.calls;
    assert.deepEqual(run?.killSignals, ["SIGTERM"], "the step's exec is ended at the deadline");
    assert.deepEqual(helperArgs(kill), ["kill", "0", "7"]);
    assert.deepEqual(
      helperArgs(follow),
      ["follow", "0", "8", "0"],
      "the follow starts after the bytes the ended stream relayed",
    );
    assert.equal(kubectl.calls.length, 3);
    assert.deepEqual(outputOf(events, "stdout"), ["working\n", "stuck here\n"]);
    assert.deepEqual(outputOf(events, "stderr"), ["last error\n"]);
    assert.deepEqual(eventsOf("notice"), []);
  });

  it("reports the timeout with a warning naming the byte output is missing from when the read after the kill is cut", async (t) => {
    mockClock(t);
    const { ctx, kubectl, events, eventsOf } = buildTestContext();
    kubectl.on(
      "exec",
      { stdout: [frame.out("abc"), frame.err("de")], hang: true },
      (call) => helperArgs(call)[0] === "run",
    );
    kubectl.on("exec", { stdout: "stopped 0\n" }, (call) => helperArgs(call)[0] === "kill");
    kubectl.on(
      "exec",
      { stdout: frame.out("partial"), stderr: `${STREAM_CUT}\n`, exitCode: 1 },
      (call) => helperArgs(call)[0] === "follow",
    );
    assert.deepEqual(await driveClock(t, runStep(ctx, POD, 0, Date.now() + RELAYED_BY_MS)), {
      status: "timeout",
      exitCode: null,
      timedOut: true,
    });
    assert.deepEqual(outputOf(events, "stdout"), ["abc", "partial"]);
    const notices = eventsOf("notice");
    assert.equal(notices.length, 1);
    assert.equal(notices[0]?.level, "warning");
    assert.match(
      notices[0]?.message ?? "",
      /^step 1 \(build\): the output it wrote after byte 10\/2 before its timeout could not be read \(kubectl exit 1: .*connection reset by peer\)$/,
    );
  });
});

describe("countUnfinishedUtf8", () => {
  it("says how many bytes the stream still owes its last character, across chunks of any size", async () => {
    const { countUnfinishedUtf8 } = await import("../../../src/executor/kubernetes/run-step.js");
    const euro = Buffer.from("€"); // 3 bytes
    assert.equal(countUnfinishedUtf8(Buffer.from("ab\n"), 0), 0);
    assert.equal(countUnfinishedUtf8(euro.subarray(0, 1), 0), 2);
    assert.equal(countUnfinishedUtf8(euro.subarray(0, 2), 0), 1);
    assert.equal(countUnfinishedUtf8(euro.subarray(1, 2), 2), 1);
    assert.equal(countUnfinishedUtf8(euro.subarray(2, 3), 1), 0);
    assert.equal(countUnfinishedUtf8(Buffer.concat([euro.subarray(1), Buffer.from("x")]), 2), 0);
    assert.equal(countUnfinishedUtf8(Buffer.from("x😀").subarray(0, 3), 0), 2);
    // byte by byte through a mixed text: whole exactly at the characters' ends
    const text = Buffer.from("a€😀b");
    let owed = 0;
    const whole: number[] = [];
    for (let i = 0; i < text.length; i += 1) {
      owed = countUnfinishedUtf8(text.subarray(i, i + 1), owed);
      if (owed === 0) whole.push(i + 1);
    }
    assert.deepEqual(whole, [1, 4, 8, 9]);
  });
});
