// Tests of the run's heartbeat: the annotation refreshed at once and at its interval, a refused first refresh handed to the run, later failures as one warning, stopped at teardown.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { startHeartbeat } from "../../../src/executor/kubernetes/heartbeat.js";
import type { RecordedCall } from "../../support/scripted-kubectl.js";
import { buildTestContext } from "./test-context.js";
import { until } from "../../support/until.js";

/** The annotations a patch call sets. */
function patchedAnnotations(call: RecordedCall): Record<string, string> {
  return (JSON.parse(call.args[call.args.indexOf("-p") + 1]!) as { metadata: { annotations: Record<string, string> } })
    .metadata.annotations;
}

describe("startHeartbeat", () => {
  it("patches knotless.dev/heartbeat with the current time onto the run's Job at every interval, and no more once stopped", async () => {
    const { ctx, kubectl } = buildTestContext({ timings: { heartbeatIntervalMs: 20 } });
    kubectl.on("patch job", { stdout: "job.batch/knotless-run-42\n" });
    let tick = Date.parse("2026-01-01T00:00:00.000Z");
    const heartbeat = startHeartbeat(ctx, () => new Date((tick += 1000)));
    await until(() => kubectl.callsTo("patch").length >= 3, "three refreshes");
    await heartbeat.stop();
    const calls = kubectl.callsTo("patch job knotless-run-42");
    assert.deepEqual(calls.slice(0, 2).map(patchedAnnotations), [
      { "knotless.dev/heartbeat": "2026-01-01T00:00:01.000Z" },
      { "knotless.dev/heartbeat": "2026-01-01T00:00:02.000Z" },
    ]);
    assert.deepEqual(calls[0]!.args.slice(0, 6), [
      "--kubeconfig",
      "/tmp/kubeconfig",
      "--context",
      "ctx",
      "--namespace",
      "ci",
    ]);
    const seen = kubectl.calls.length;
    await sleep(80);
    assert.equal(kubectl.calls.length, seen, "no refresh after stop");
  });

  it("starts refreshes one interval apart even when each takes most of it", async (t) => {
    // Mocked clock and timers: the gaps are exact, whatever the machine's load.
    t.mock.timers.enable({ apis: ["setTimeout", "Date"], now: 0 });
    const { ctx, kubectl } = buildTestContext({ timings: { heartbeatIntervalMs: 60 } });
    const starts: number[] = [];
    let endRefresh: () => void = () => {};
    kubectl.on("patch job", async () => {
      starts.push(Date.now());
      await new Promise<void>((resolve) => (endRefresh = resolve));
      return {};
    });
    const flush = async (): Promise<void> => {
      for (let i = 0; i < 20; i += 1) await new Promise((resolve) => setImmediate(resolve));
    };
    const heartbeat = startHeartbeat(ctx);
    for (let refresh = 0; refresh < 3; refresh += 1) {
      await flush();
      t.mock.timers.tick(45); // the refresh takes 45 ms of the 60 ms interval
      endRefresh();
      await flush();
      t.mock.timers.tick(15);
    }
    await flush();
    await heartbeat.stop();
    // Timed from the end of each refresh they would be 105 ms apart.
    assert.deepEqual(starts, [0, 60, 120, 180]);
  });

  it("makes its first refresh at once, not one interval after the start", async () => {
    const { ctx, kubectl } = buildTestContext({ timings: { heartbeatIntervalMs: 60_000 } });
    kubectl.on("patch job", {});
    const heartbeat = startHeartbeat(ctx);
    assert.equal(await heartbeat.first, undefined);
    await heartbeat.stop();
    assert.equal(
      kubectl.callsTo("patch job knotless-run-42").length,
      1,
      "one refresh, the first, within the first interval",
    );
  });

  for (const [kind, stderr] of [
    [
      "forbidden",
      'Error from server (Forbidden): jobs.batch "knotless-run-42" is forbidden: User "system:serviceaccount:ci:knotless-runner" cannot patch resource "jobs" in API group "batch" in the namespace "ci"\n',
    ],
    ["unauthorized", "error: You must be logged in to the server (Unauthorized)\n"],
  ] as const) {
    it(`hands a ${kind} first refresh to the run as its ${kind} error naming patch on jobs.batch, without the warning that the run goes on`, async () => {
      const { ctx, kubectl, eventsOf } = buildTestContext({ timings: { heartbeatIntervalMs: 5 } });
      kubectl.on("patch job", { exitCode: 1, stderr });
      const heartbeat = startHeartbeat(ctx);
      const refused = await heartbeat.first;
      await until(() => kubectl.callsTo("patch").length >= 3, "refreshes after the refusal");
      await heartbeat.stop();
      assert.equal(refused?.name, "InfraError");
      assert.equal(refused?.reason, kind);
      assert.match(
        refused?.message ?? "",
        /^cannot set the run's heartbeat on Job knotless-run-42 \(it needs patch on jobs\.batch; without it gc would take the live run for abandoned\): /,
      );
      assert.ok(refused?.message.includes(stderr.trim()), refused?.message);
      assert.deepEqual(eventsOf("notice"), [], "the run fails on it: no warning that it goes on");
    });
  }

  it("takes a first refresh that fails otherwise (a transient error) for a warning, not a refusal", async () => {
    const { ctx, kubectl, eventsOf } = buildTestContext({ timings: { heartbeatIntervalMs: 60_000 } });
    kubectl.on("patch job", {
      exitCode: 1,
      stderr: "Error from server (ServiceUnavailable): the server is currently unable to handle the request\n",
    });
    const heartbeat = startHeartbeat(ctx);
    assert.equal(await heartbeat.first, undefined);
    await heartbeat.stop();
    assert.match(
      eventsOf("notice")[0]?.message ?? "",
      /could not refresh knotless\.dev\/heartbeat on Job knotless-run-42 \(Error from server \(ServiceUnavailable\).*\); the run goes on/,
    );
  });

  it("warns once while later refreshes fail, never fails the run, and says when they work again", async () => {
    const { ctx, kubectl, eventsOf } = buildTestContext({ timings: { heartbeatIntervalMs: 5 } });
    const refused = {
      exitCode: 1,
      stderr:
        'Error from server (Forbidden): jobs.batch "knotless-run-42" is forbidden: User "ci" cannot patch resource "jobs"\n',
    };
    kubectl.on("patch job", [{}, refused, refused, refused, {}]);
    const heartbeat = startHeartbeat(ctx);
    assert.equal(await heartbeat.first, undefined, "the first refresh worked");
    await until(() => kubectl.callsTo("patch").length >= 6, "six refreshes");
    await heartbeat.stop();
    const notices = eventsOf("notice");
    assert.equal(notices.filter((n) => n.level === "warning").length, 1, JSON.stringify(notices));
    assert.match(
      notices[0]!.message,
      /could not refresh knotless\.dev\/heartbeat on Job knotless-run-42 \(Error from server \(Forbidden\).*\); the run goes on/,
    );
    assert.match(notices[1]!.message, /refreshed again/);
  });

  it("settles its first verdict as undefined when stopped before the first refresh answered", async () => {
    const { ctx, kubectl } = buildTestContext({ timings: { heartbeatIntervalMs: 60_000 } });
    kubectl.on("patch job", { hang: true });
    const heartbeat = startHeartbeat(ctx);
    await until(() => kubectl.calls.length === 1, "the first refresh in flight");
    heartbeat.stopNow();
    assert.equal(await heartbeat.first, undefined);
  });

  it("kills a refresh in flight when stopped, and stopNow does so without waiting", async () => {
    for (const how of ["stop", "stopNow"] as const) {
      const { ctx, kubectl, eventsOf } = buildTestContext({ timings: { heartbeatIntervalMs: 5 } });
      kubectl.on("patch job", { hang: true });
      const heartbeat = startHeartbeat(ctx);
      await until(() => kubectl.calls.length === 1, "a refresh in flight");
      if (how === "stop") await heartbeat.stop();
      else heartbeat.stopNow();
      assert.deepEqual(kubectl.calls[0]!.killSignals, ["SIGTERM"], how);
      assert.deepEqual(eventsOf("notice"), [], "a refresh the stop ended is no failure");
    }
  });
});
