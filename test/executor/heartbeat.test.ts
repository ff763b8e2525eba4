// Tests of the run's heartbeat: the annotation refreshed at its interval, failures as one warning, stopped at teardown.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { startHeartbeat } from "../../src/executor/heartbeat.js";
import type { RecordedCall } from "../support/scripted-kubectl.js";
import { buildTestContext } from "./test-context.js";

/** The annotations a patch call sets. */
function patchedAnnotations(call: RecordedCall): Record<string, string> {
  return (JSON.parse(call.args[call.args.indexOf("-p") + 1]!) as { metadata: { annotations: Record<string, string> } }).metadata.annotations;
}

async function until(check: () => boolean, what: string): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > 5000) assert.fail(`${what} not within 5 s`);
    await sleep(5);
  }
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
    assert.deepEqual(calls.slice(0, 2).map(patchedAnnotations), [{ "knotless.dev/heartbeat": "2026-01-01T00:00:01.000Z" }, { "knotless.dev/heartbeat": "2026-01-01T00:00:02.000Z" }]);
    assert.deepEqual(calls[0]!.args.slice(0, 6), ["--kubeconfig", "/tmp/kubeconfig", "--context", "ctx", "--namespace", "ci"]);
    const seen = kubectl.calls.length;
    await sleep(80);
    assert.equal(kubectl.calls.length, seen, "no refresh after stop");
  });

  it("does not refresh before the first interval is over: the Job's creation stands for it", async () => {
    const { ctx, kubectl } = buildTestContext({ timings: { heartbeatIntervalMs: 60_000 } });
    const heartbeat = startHeartbeat(ctx);
    await sleep(30);
    await heartbeat.stop();
    assert.equal(kubectl.calls.length, 0);
  });

  it("warns once while refreshes fail, never fails the run, and says when they work again", async () => {
    const { ctx, kubectl, eventsOf } = buildTestContext({ timings: { heartbeatIntervalMs: 5 } });
    const refused = { exitCode: 1, stderr: 'Error from server (Forbidden): jobs.batch "knotless-run-42" is forbidden: User "ci" cannot patch resource "jobs"\n' };
    kubectl.on("patch job", [refused, refused, refused, {}]);
    const heartbeat = startHeartbeat(ctx);
    await until(() => kubectl.callsTo("patch").length >= 5, "five refreshes");
    await heartbeat.stop();
    const notices = eventsOf("notice");
    assert.equal(notices.filter((n) => n.level === "warning").length, 1, JSON.stringify(notices));
    assert.match(notices[0]!.message, /could not refresh knotless\.dev\/heartbeat on Job knotless-run-42 \(Error from server \(Forbidden\).*\); the run goes on/);
    assert.match(notices[1]!.message, /refreshed again/);
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
