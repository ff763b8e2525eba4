import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { InfraError, RunTakenOverError } from "../../src/core/errors.js";
import type { RunEvent } from "../../src/events/run-events.js";
import { Kubectl } from "../../src/cluster/kubectl/kubectl.js";
import { KubectlCluster } from "../../src/cluster/kubectl/kubectl-cluster.js";
import type { FencedAction, RunFence } from "../../src/run/run-fence.js";
import type { RunResult } from "../../src/run/run-result.js";
import { runWorkflow } from "../../src/run/run-workflow.js";
import { exampleSettings } from "../support/example-settings.js";
import { ScriptedExecutor, type ExecutorScript } from "../support/scripted-executor.js";

const NO_CLUSTER = new KubectlCluster(
  new Kubectl({
    binary: "kubectl",
    spawn: () => {
      throw new Error("this test spawns no kubectl");
    },
  }),
  {},
);

let checkout = "";
before(async () => {
  checkout = await mkdtemp(join(tmpdir(), "knotless-run-fence-"));
});
after(async () => {
  await rm(checkout, { recursive: true, force: true });
});

/** Runs three steps under `fence`; records what the fence was asked and what the executor did. */
async function runFenced(
  fence: RunFence,
  script: ExecutorScript = {},
): Promise<{ outcome: RunResult | Error; asked: string[]; events: RunEvent[]; executor: ScriptedExecutor }> {
  const asked: string[] = [];
  const events: RunEvent[] = [];
  let executor: ScriptedExecutor | undefined;
  const outcome = await runWorkflow({
    settings: { ...exampleSettings({ steps: ["build", "test", "package"] }), checkoutDir: checkout },
    cluster: NO_CLUSTER,
    signal: new AbortController().signal,
    sinks: [(event) => events.push(event)],
    createExecutor: (ctx) => (executor = new ScriptedExecutor(ctx, script)),
    fence: (action, signal) => {
      asked.push(action.kind === "step" ? `step ${action.index}` : action.kind);
      return fence(action, signal);
    },
  }).catch((error: Error) => error);
  assert.ok(executor);
  return { outcome, asked, events, executor };
}

const takenBefore =
  (match: (action: FencedAction) => boolean): RunFence =>
  async (action) => {
    if (match(action)) throw new RunTakenOverError("b", "run 42 was adopted by instance b");
  };

describe("runWorkflow's fence", () => {
  it("asks the fence before each step, the outputs, the teardown and the result, and runs as without one when it passes", async () => {
    const { outcome, asked, executor } = await runFenced(async () => {});
    assert.equal((outcome as RunResult).status, "success");
    assert.deepEqual(asked, ["step 0", "step 1", "step 2", "outputs", "teardown", "result"]);
    assert.deepEqual(executor.calls, ["setup", "copyIn", "runStep 0", "runStep 1", "runStep 2", "copyOut", "teardown"]);
  });

  it("stops before a step the fence finds taken over: that step never starts, the Job is left (no teardown), and the run rejects with the error after one notice saying so", async () => {
    const { outcome, events, executor } = await runFenced(
      takenBefore((action) => action.kind === "step" && action.index === 1),
    );
    assert.ok(outcome instanceof RunTakenOverError, String(outcome));
    assert.equal(outcome.owner, "b");
    assert.deepEqual(executor.calls, ["setup", "copyIn", "runStep 0", "leave"]);
    const last = events.at(-1);
    assert.equal(last?.kind, "notice");
    assert.match(last?.kind === "notice" ? last.message : "", /adopted by instance b/);
    assert.equal(
      events.some((event) => event.kind === "run-end" || (event.kind === "phase-start" && event.phase === "teardown")),
      false,
      "a run-end or a teardown phase was told",
    );
  });

  it("leaves the Job instead of deleting it when the fence finds the run taken over right before the teardown", async () => {
    const { outcome, executor } = await runFenced(takenBefore((action) => action.kind === "teardown"));
    assert.ok(outcome instanceof RunTakenOverError);
    assert.equal(executor.calls.at(-1), "leave");
    assert.equal(executor.calls.includes("teardown"), false);
  });

  it("fails the run with ownership-unknown and leaves its Job when the fence cannot tell who owns it before a step", async () => {
    const { outcome, asked, executor } = await runFenced(async (action) => {
      if (action.kind === "step" && action.index === 2)
        throw new InfraError("ownership-unknown", "Job knotless-run-42 could not be read");
    });
    const result = outcome as RunResult;
    assert.equal(result.status, "failed");
    assert.equal(result.errorReason, "ownership-unknown");
    assert.deepEqual(executor.calls, ["setup", "copyIn", "runStep 0", "runStep 1", "leave"]);
    assert.equal(asked.includes("teardown"), false, "the fence was asked again before leaving");
  });

  it("leaves the Job and fails the run with ownership-unknown when the fence cannot tell before the teardown", async () => {
    const { outcome, executor } = await runFenced(async (action) => {
      if (action.kind === "teardown")
        throw new InfraError("ownership-unknown", "Job knotless-run-42 could not be read");
    });
    const result = outcome as RunResult;
    assert.equal(result.status, "failed");
    assert.equal(result.errorReason, "ownership-unknown");
    assert.equal(executor.calls.at(-1), "leave");
    assert.equal(executor.calls.includes("teardown"), false);
  });
});
