import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { DEFAULT_RUNNER_CONFIG } from "../../src/config/runner-config.js";
import type { StepOutcome, TeardownReport } from "../../src/executor/executor.js";
import { Kubectl } from "../../src/cluster/kubectl/kubectl.js";
import { KubectlCluster } from "../../src/cluster/kubectl/kubectl-cluster.js";
import type { FollowerOutput } from "../../src/serve/follower-output.js";
import { XrpcError } from "../../src/serve/http-errors.js";
import { loadLexicons } from "../../src/serve/lexicon-schemas.js";
import type { RunDefaults, SubmitRunInput } from "../../src/serve/prepare-submission.js";
import type { RunResult } from "../../src/run/run-result.js";
import { readRunPlan } from "../../src/run/run-plan.js";
import { RunService } from "../../src/serve/run-service.js";
import { RunStore, type StatusEvent } from "../../src/serve/run-store.js";
import { WorkflowError } from "../../src/workflow/workflow-errors.js";
import { CancelledError, InfraError } from "../../src/core/errors.js";
import { SCRIPTED_POD, ScriptedExecutor, untilAborted, type ExecutorScript } from "../support/scripted-executor.js";
import { startGitHttpServer, type GitHttpServer } from "../support/git-http-server.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const WORKFLOW = [
  "when:",
  "  - event: push",
  "    branch: main",
  "steps:",
  "  - name: one",
  "    command: echo one",
  "  - name: two",
  "    command: echo two",
  "",
].join("\n");

/** A step that waits until the test releases it (or the run is cancelled). */
function gate() {
  const waiting = new Map<string, () => void>();
  const started: string[] = [];
  let opened = false;
  const runStep: ExecutorScript["runStep"] = async (index, _deadline, ctx) => {
    const runId = ctx.settings.runId;
    if (index === 0) started.push(runId);
    ctx.emit({ kind: "step-output", index, stream: "stdout", text: `out ${runId} ${index}\n` });
    if (!opened)
      await Promise.race([
        new Promise<void>((resolve) => waiting.set(`${runId}/${index}`, resolve)),
        untilAborted(ctx.signal),
      ]);
    return (
      ctx.settings.runId.startsWith("fail")
        ? { status: "failed", exitCode: 3, timedOut: false }
        : { status: "success", exitCode: 0, timedOut: false }
    ) as StepOutcome;
  };
  const release = async (runId: string): Promise<void> => {
    for (const index of [0, 1]) {
      for (let i = 0; i < 200 && !waiting.has(`${runId}/${index}`); i++) await new Promise((r) => setTimeout(r, 5));
      waiting.get(`${runId}/${index}`)?.();
      waiting.delete(`${runId}/${index}`);
    }
  };
  /** Resolves once the run's step `index` is waiting in the gate (its start already recorded); rejects after about 5 s. */
  const untilWaiting = async (runId: string, index: number): Promise<void> => {
    for (let i = 0; i < 1000 && !waiting.has(`${runId}/${index}`); i++) await new Promise((r) => setTimeout(r, 5));
    if (!waiting.has(`${runId}/${index}`)) throw new Error(`step ${index} of run ${runId} never reached the gate`);
  };
  /** Lets every step through, now and after: what a test that failed half-way leaves running ends. */
  const releaseAll = (): void => {
    opened = true;
    for (const resolve of waiting.values()) resolve();
    waiting.clear();
  };
  return { runStep, release, releaseAll, untilWaiting, started, waiting };
}

/**
 * Executor calls stuck where nothing reaches (a step that ignores its cancel, a teardown that never answers) until
 * the test ends them: an abandoned run must not outlive its test, or its runWorkflow's timers keep the process alive.
 */
function stuckCalls() {
  const ends: Array<() => void> = [];
  let ended = false;
  const hold = <T>(settle: (resolve: (value: T) => void, reject: (error: Error) => void) => void): Promise<T> =>
    new Promise<T>((resolve, reject) => (ended ? settle(resolve, reject) : ends.push(() => settle(resolve, reject))));
  const script: ExecutorScript = {
    runStep: () => hold<StepOutcome>((_resolve, reject) => reject(new CancelledError("the test ended the stuck step"))),
    teardown: () => hold<TeardownReport>((resolve) => resolve({ deleted: true, leftBehind: false, detail: "deleted" })),
  };
  /** Ends every stuck call, and makes the later ones end at once. */
  const end = (): void => {
    ended = true;
    for (const finish of ends.splice(0)) finish();
  };
  return { script, end };
}

/** A follower that takes everything at once: the lines it got, parsed, and a stop. */
function collect<T = StatusEvent & { epoch: string }>() {
  const items: T[] = [];
  const controller = new AbortController();
  const output: FollowerOutput = {
    signal: controller.signal,
    room: async (most) => (controller.signal.aborted ? 0 : most),
    send: (lines) =>
      items.push(
        ...lines
          .toString("utf8")
          .split("\n")
          .filter((line) => line !== "")
          .map((line) => JSON.parse(line) as T),
      ),
  };
  return { output, items, stop: () => controller.abort() };
}

/** Lets followers catch up with what is committed. */
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 20));

function makeService(
  options: {
    maxRuns?: number;
    maxRunsPerRepo?: number;
    maxQueued?: number;
    script?: ExecutorScript;
    cacheDir?: string;
    defaults?: Partial<RunDefaults>;
  } = {},
) {
  const stateDir = makeTestTempDir("serve-service-");
  const checkout = join(stateDir, "checkout");
  mkdirSync(checkout);
  const store = new RunStore(join(stateDir, "state"));
  const executors: ScriptedExecutor[] = [];
  const warnings: string[] = [];
  const service = new RunService({
    stateDir: join(stateDir, "state"),
    store,
    defaults: {
      target: { namespace: "ci" },
      podTimeoutMs: 1000,
      maxOutputBytes: 1 << 20,
      maxLogBytes: 1 << 20,
      git: { binary: "git", env: process.env },
      checkoutRoot: stateDir,
      allowHttpGit: true,
      ...(options.cacheDir
        ? { caches: { off: false, store: { kind: "dir" as const, dir: options.cacheDir }, maxBytes: 1 << 30 } }
        : {}),
      ...options.defaults,
    },
    limits: {
      maxRuns: options.maxRuns ?? 2,
      ...(options.maxRunsPerRepo ? { maxRunsPerRepo: options.maxRunsPerRepo } : {}),
      maxQueued: options.maxQueued ?? 100,
      maxWorkflowBytes: 10_000,
      maxSecrets: 4,
      maxSecretBytes: 100,
    },
    cluster: new KubectlCluster(new Kubectl({ binary: "/nonexistent/kubectl" })),
    createExecutor: (ctx) => {
      const executor = new ScriptedExecutor(ctx, options.script ?? {});
      executors.push(executor);
      return executor;
    },
    warn: (message) => warnings.push(message),
  });
  const submit = (runId: string, extra: Partial<SubmitRunInput> = {}) =>
    service.submit({
      workflow: { name: ".tangled/workflows/ci.yml", text: WORKFLOW },
      checkout: { dir: checkout },
      trigger: { event: "push", ref: "refs/heads/main", repo: "did:plc:x/repo" },
      runId,
      ...extra,
    });
  return { service, store, submit, executors, warnings, checkout, stateDir };
}

/** A second service on the same store, as a restarted process opens it. */
function reopen(store: RunStore, stateDir: string): RunService {
  return new RunService({
    stateDir: join(stateDir, "state"),
    store,
    defaults: { target: {}, podTimeoutMs: 1, maxOutputBytes: 1, maxLogBytes: 1, checkoutRoot: stateDir },
    limits: { maxRuns: 1, maxQueued: 1, maxWorkflowBytes: 10_000, maxSecrets: 1, maxSecretBytes: 1 },
    cluster: new KubectlCluster(new Kubectl({ binary: "/nonexistent" })),
    warn: () => undefined,
  });
}

describe("the run service", () => {
  it("keeps at most --max-runs running and starts the rest in submission order as slots free", async () => {
    const g = gate();
    const { service, submit } = makeService({ maxRuns: 2, script: { runStep: g.runStep } });
    for (const id of ["r1", "r2", "r3", "r4"])
      assert.deepEqual(await submit(id), { runId: id, status: id === "r1" || id === "r2" ? "running" : "pending" });
    assert.equal(service.runningCount, 2);
    assert.equal(service.queueLength, 2);
    await g.release("r2");
    await g.release("r1");
    await g.release("r3");
    await g.release("r4");
    await service.whenIdle();
    assert.deepEqual(g.started, ["r1", "r2", "r3", "r4"]);
    for (const id of ["r1", "r2", "r3", "r4"]) assert.equal((await service.getRun(id)).status, "success");
  });

  it("holds back a repository at --max-runs-per-repo while another repository's later run starts", async () => {
    const g = gate();
    const { service, submit } = makeService({ maxRuns: 2, maxRunsPerRepo: 1, script: { runStep: g.runStep } });
    const repo = (name: string) => ({ trigger: { event: "push", ref: "refs/heads/main", repo: name } });
    assert.equal((await submit("a1", repo("a"))).status, "running");
    assert.equal((await submit("a2", repo("a"))).status, "pending");
    assert.equal((await submit("b1", repo("b"))).status, "running");
    await g.release("a1");
    await g.release("b1");
    await g.release("a2");
    await service.whenIdle();
    assert.deepEqual(g.started, ["a1", "b1", "a2"]);
  });

  it("records every status change as an event, in order, each with a larger cursor, and validates them against the lexicon", async () => {
    const lexicons = await loadLexicons();
    const g = gate();
    const { service, submit } = makeService({ script: { runStep: g.runStep } });
    const { output, items: events, stop } = collect();
    void service.followEvents(0, output);
    await submit("fail-1");
    await g.release("fail-1");
    await service.whenIdle();
    await settle();
    stop();
    assert.deepEqual(
      events.map((e) => e.status),
      ["pending", "running", "failed"],
    );
    assert.ok(events.every((e, i) => i === 0 || e.cursor > events[i - 1]!.cursor));
    for (const event of events) lexicons.def("statusEvent", event);
    const view = await service.getRun("fail-1");
    assert.equal(view.status, "failed");
    lexicons.output("dev.knotless.runner.getRun", view);
    lexicons.record(view.result);
  });

  it("backfills events after a cursor and then goes on live, with nothing missed or repeated", async () => {
    const g = gate();
    const { service, submit } = makeService({ script: { runStep: g.runStep } });
    await submit("a");
    const first = collect();
    void service.followEvents(0, first.output);
    await settle();
    first.stop();
    const resumed = collect();
    void service.followEvents(first.items.at(-1)!.cursor, resumed.output);
    await g.release("a");
    await service.whenIdle();
    await settle();
    const all = collect();
    void service.followEvents(0, all.output);
    await settle();
    assert.deepEqual(
      [...first.items, ...resumed.items].map((e) => e.cursor),
      all.items.map((e) => e.cursor),
    );
    for (const follower of [resumed, all]) follower.stop();
  });

  it("sends an events follower only what the room it is given holds, and the rest once it has room again, nothing missed or repeated", async () => {
    const { service, submit } = makeService();
    for (const id of ["e1", "e2", "e3"]) await submit(id);
    await service.whenIdle();
    const sent: Array<{ cursor: number }> = [];
    let rooms = 1;
    let grant: (() => void) | undefined;
    const controller = new AbortController();
    const output: FollowerOutput = {
      signal: controller.signal,
      room: async () => {
        while (rooms === 0 && !controller.signal.aborted) await new Promise<void>((resolve) => (grant = resolve));
        rooms -= 1;
        return controller.signal.aborted ? 0 : 200; // one event's line fits, two do not
      },
      send: (lines) =>
        sent.push(
          ...lines
            .toString("utf8")
            .trim()
            .split("\n")
            .map((line) => JSON.parse(line) as { cursor: number }),
        ),
    };
    void service.followEvents(0, output);
    await settle();
    assert.equal(sent.length, 1);
    rooms = 100;
    grant!();
    await settle();
    controller.abort();
    grant?.();
    assert.deepEqual(
      sent.map((e) => e.cursor),
      Array.from({ length: 9 }, (_, i) => i + 1),
    );
  });

  it("returns the same run for the same runId, never starting a second one", async () => {
    const g = gate();
    const { service, submit, executors } = makeService({ script: { runStep: g.runStep } });
    const [one, two] = await Promise.all([submit("same"), submit("same")]);
    assert.equal(one.runId, two.runId);
    assert.deepEqual(await submit("same"), { runId: "same", status: "running" });
    await g.release("same");
    await service.whenIdle();
    assert.equal(executors.length, 1);
    assert.deepEqual(await submit("same"), { runId: "same", status: "success" });
  });

  it("refuses a bad workflow with its file:line:column, records nothing and creates no executor", async () => {
    const { service, store, executors } = makeService();
    await assert.rejects(
      service.submit({
        workflow: { name: "ci.yml", text: "steps:\n  - name: x\n    comand: oops\n" },
        checkout: { dir: "/" },
        runId: "bad",
      }),
      (error: unknown) => error instanceof WorkflowError && /ci\.yml:\d+:\d+/.test(error.message),
    );
    assert.equal(store.getRun("bad"), undefined);
    assert.equal(store.lastCursor(), 0);
    assert.equal(executors.length, 0);
  });

  it("holds every workflow to the service's runner configuration: over a limit refused at its position, clamped with the warning first in the run's log and the clamp in getRun's result", async () => {
    const limited = (onExceed: "refuse" | "clamp") =>
      makeService({
        defaults: {
          runner: { config: { ...DEFAULT_RUNNER_CONFIG, limits: { maxTimeoutMs: 60_000, onExceed } }, file: "ops.yml" },
        },
      });
    const text = `timeout: 2h\n${WORKFLOW}`;
    const refusing = limited("refuse");
    await assert.rejects(
      refusing.submit("over", { workflow: { name: "ci.yml", text } }),
      (error: unknown) =>
        error instanceof WorkflowError &&
        /^ci\.yml:1:10: timeout: 2h00m is over limits\.maxTimeout 1m00s in --config ops\.yml/.test(error.message),
    );
    assert.equal(refusing.store.getRun("over"), undefined);
    assert.equal(refusing.executors.length, 0);
    const clamping = limited("clamp");
    await clamping.submit("clamped", { workflow: { name: "ci.yml", text } });
    await clamping.service.whenIdle();
    assert.equal(clamping.executors[0]!.ctx.settings.timeoutMs, 60_000);
    const first = JSON.parse(
      readFileSync(join(clamping.stateDir, "state", "runs", "clamped", "log.ndjson"), "utf8").split("\n")[0]!,
    ) as { content: string };
    assert.match(
      first.content,
      /ci\.yml:1:10: warning: timeout: 2h00m is over limits\.maxTimeout 1m00s in --config ops\.yml: clamped to 1m00s/,
    );
    const view = await clamping.service.getRun("clamped");
    assert.deepEqual((view.result as RunResult | undefined)?.workflow?.clamped, [
      { path: "timeout", value: "2h00m", limit: "1m00s", setting: "limits.maxTimeout", at: "ci.yml:1:10" },
    ]);
    const lexicons = await loadLexicons();
    lexicons.output("dev.knotless.runner.getRun", view);
    lexicons.record(view.result);
  });

  it("leaves each run's node warm for --keep-warm: the executor of every run gets the service's keepWarm, as run's does", async () => {
    const { service, submit, executors } = makeService({ defaults: { keepWarm: { seconds: 120, maxWarm: 2 } } });
    await submit("w1");
    await submit("w2");
    await service.whenIdle();
    assert.deepEqual(
      executors.map((executor) => executor.ctx.settings.keepWarm),
      [
        { seconds: 120, maxWarm: 2 },
        { seconds: 120, maxWarm: 2 },
      ],
    );
    assert.deepEqual(
      executors.map((executor) => executor.calls.at(-1)),
      ["teardown", "teardown"],
    );
  });

  it("records a workflow whose `when` does not match as skipped, with a result and no executor", async () => {
    const { service, submit, executors } = makeService();
    assert.deepEqual(await submit("skip", { trigger: { event: "push", ref: "refs/heads/dev" } }), {
      runId: "skip",
      status: "skipped",
    });
    const view = await service.getRun("skip");
    assert.match(view.reason!, /dev/);
    assert.equal((view.result as { status: string }).status, "skipped");
    assert.equal(executors.length, 0);
  });

  it("cancels a pending run so that it never starts, and a running one through its signal; cancelling again changes nothing", async (t) => {
    const g = gate();
    const { service, store, submit, executors } = makeService({ maxRuns: 1, script: { runStep: g.runStep } });
    t.after(() => g.releaseAll());
    await submit("running");
    await submit("pending");
    assert.deepEqual(service.cancel("pending", "test"), { runId: "pending", status: "cancelled" });
    await g.untilWaiting("running", 0);
    assert.equal(store.getRun("running")!.step, 0, "the step is recorded as started");
    assert.equal(store.getRun("running")!.pod, null, "the scripted executor emits no pod-ready");
    let recordedWhenTold: string | null | undefined;
    executors[0]!.ctx.signal.addEventListener(
      "abort",
      () => (recordedWhenTold = store.getRun("running")!.cancelRequestedAt),
    );
    service.cancel("running", "test");
    assert.ok(recordedWhenTold, "the cancel request is in the database before the run is told");
    await service.whenIdle();
    assert.equal((await service.getRun("running")).status, "cancelled");
    assert.equal((await service.getRun("pending")).status, "cancelled");
    assert.deepEqual(
      executors.map((e) => e.ctx.settings.runId),
      ["running"],
    );
    assert.ok(executors[0]!.calls.includes("teardown"));
    assert.deepEqual(service.cancel("pending", "test"), { runId: "pending", status: "cancelled" });
    assert.throws(
      () => service.cancel("nope", "test"),
      (e: unknown) => e instanceof XrpcError && e.error === "RunNotFound",
    );
  });

  it("refuses an empty secret and a secret name that is not a variable name, recording nothing", async () => {
    const { store, submit } = makeService();
    await assert.rejects(submit("e", { secrets: [{ name: "A", value: "" }] }), /empty/);
    await assert.rejects(submit("e", { secrets: [{ name: "1A", value: "x" }] }), /secret name/);
    assert.equal(store.getRun("e"), undefined);
  });

  it("refuses more queued runs than --max-queued with 429, and oversized secrets with 413", async () => {
    const g = gate();
    const { service, submit } = makeService({ maxRuns: 1, maxQueued: 1, script: { runStep: g.runStep } });
    await submit("q1");
    await submit("q2");
    await assert.rejects(submit("q3"), (e: unknown) => e instanceof XrpcError && e.status === 429);
    await assert.rejects(
      submit("s", { secrets: [{ name: "A", value: "x".repeat(101) }] }),
      (e: unknown) => e instanceof XrpcError && e.status === 413,
    );
    service.cancel("q2", "test");
    service.cancel("q1", "test");
    await service.whenIdle();
  });

  it("keeps secrets out of the database and the run's files", async () => {
    const { service, submit, stateDir } = makeService();
    await submit("sec", { secrets: [{ name: "TOKEN", value: "hunter2-very-secret" }] });
    await service.whenIdle();
    const db =
      readFileSync(join(stateDir, "state", "runner.sqlite")).toString("latin1") +
      readFileSync(join(stateDir, "state", "runner.sqlite-wal")).toString("latin1");
    assert.match(db, /TOKEN/);
    assert.doesNotMatch(db, /hunter2/);
    for (const file of ["result.json", "log.ndjson", "run.log"])
      assert.doesNotMatch(readFileSync(join(stateDir, "state", "runs", "sec", file), "utf8"), /hunter2/);
  });

  it("gives a client following the log every line from the first, live, and one joining after the end the same lines from log.ndjson", async () => {
    const g = gate();
    const { service, submit, stateDir } = makeService({ script: { runStep: g.runStep } });
    await submit("logs");
    const live = collect<object>();
    const ended = service.followLogs("logs", live.output);
    await g.release("logs");
    await ended;
    const late = collect<object>();
    await service.followLogs("logs", late.output);
    const file = readFileSync(join(stateDir, "state", "runs", "logs", "log.ndjson"), "utf8")
      .trim()
      .split("\n");
    assert.deepEqual(
      live.items,
      file.map((line) => JSON.parse(line)),
    );
    assert.deepEqual(
      late.items,
      file.map((line) => JSON.parse(line)),
    );
    const lexicons = await loadLexicons();
    for (const line of file) lexicons.def("logLine", JSON.parse(line));
    assert.ok(file.some((l) => l.includes("out logs 0")));
  });

  it("drains: refuses new runs with 503, cancels the pending ones, and cancels the running ones at the timeout", async () => {
    const g = gate();
    const { service, submit } = makeService({ maxRuns: 1, script: { runStep: g.runStep } });
    await submit("d1");
    await submit("d2");
    const drained = service.drain(50, new AbortController().signal, 5000);
    await assert.rejects(submit("d3"), (e: unknown) => e instanceof XrpcError && e.status === 503);
    assert.deepEqual(await drained, []);
    assert.equal((await service.getRun("d1")).status, "cancelled");
    assert.equal((await service.getRun("d2")).status, "cancelled");
  });

  it("gives up on a cancelled run whose clean-up never ends after the drain's clean-up timeout: deletes its Job synchronously and names it", async (t) => {
    const torn: string[] = [];
    const calls = stuckCalls();
    class StuckExecutor extends ScriptedExecutor {
      teardownNowSync(timeoutMs: number) {
        torn.push(`${this.ctx.settings.runId} ${timeoutMs}`);
        return { detail: `deleted Job ${this.ctx.settings.jobName}`, mayBeLeft: false };
      }
    }
    const stateDir = makeTestTempDir("serve-stuck-");
    const stuck = new RunService({
      stateDir,
      store: new RunStore(":memory:"),
      defaults: { target: {}, podTimeoutMs: 1000, maxOutputBytes: 1, maxLogBytes: 1 << 20, checkoutRoot: stateDir },
      limits: { maxRuns: 2, maxQueued: 2, maxWorkflowBytes: 10_000, maxSecrets: 1, maxSecretBytes: 1 },
      cluster: new KubectlCluster(new Kubectl({ binary: "/nonexistent" })),
      // A step that ignores its cancel and a teardown that never answers: a transport stuck where nothing reaches.
      createExecutor: (ctx) => new StuckExecutor(ctx, calls.script),
      warn: () => undefined,
    });
    t.after(async () => {
      calls.end();
      await stuck.whenIdle();
    });
    await stuck.submit({ workflow: { name: "ci.yml", text: WORKFLOW }, checkout: { dir: stateDir }, runId: "stuck" });
    const started = Date.now();
    const abandoned = await stuck.drain(50, new AbortController().signal, 300, 1234);
    const took = Date.now() - started;
    assert.deepEqual(abandoned, [{ runId: "stuck", detail: "deleted Job knotless-run-stuck", mayBeLeft: false }]);
    assert.deepEqual(torn, ["stuck 1234"]);
    const recorded = await stuck.getRun("stuck");
    assert.equal(recorded.status, "cancelled");
    assert.match(recorded.reason ?? "", /clean-up did not end within 0s .*deleted Job knotless-run-stuck$/);
    // The clean-up never ends: without the give-up the drain never would; 20 s is what a busy machine cannot add.
    assert.ok(took >= 300 && took < 20_000, `the drain took ${took} ms (timeout 50 ms, clean-up 300 ms)`);
  });

  it("gives the clean-up timeout from the moment a second signal cancels at once, before the drain timeout", async (t) => {
    const calls = stuckCalls();
    const stateDir = makeTestTempDir("serve-stuck-now-");
    const stuck = new RunService({
      stateDir,
      store: new RunStore(":memory:"),
      defaults: { target: {}, podTimeoutMs: 1000, maxOutputBytes: 1, maxLogBytes: 1 << 20, checkoutRoot: stateDir },
      limits: { maxRuns: 2, maxQueued: 2, maxWorkflowBytes: 10_000, maxSecrets: 1, maxSecretBytes: 1 },
      cluster: new KubectlCluster(new Kubectl({ binary: "/nonexistent" })),
      createExecutor: (ctx) => new ScriptedExecutor(ctx, calls.script),
      warn: () => undefined,
    });
    t.after(async () => {
      calls.end();
      await stuck.whenIdle();
    });
    await stuck.submit({
      workflow: { name: "ci.yml", text: WORKFLOW },
      checkout: { dir: stateDir },
      runId: "stuck-now",
    });
    const now = new AbortController();
    const started = Date.now();
    const drained = stuck.drain(60_000, now.signal, 300);
    setTimeout(() => now.abort(), 50);
    const abandoned = await drained;
    assert.deepEqual(
      abandoned.map((run) => [run.runId, run.mayBeLeft]),
      [["stuck-now", false]],
    );
    // Waiting out the drain timeout it would take 60 s; 20 s tells that from the 350 ms on a busy machine.
    assert.ok(Date.now() - started < 20_000, `the drain took ${Date.now() - started} ms`);
  });

  it("leaves the Job of a run the next start can re-attach to when the service crashes, and deletes the others' synchronously (teardownAllNowSync)", async () => {
    const g = gate();
    const torn: string[] = [];
    const left: string[] = [];
    class CrashableExecutor extends ScriptedExecutor {
      teardownNowSync(timeoutMs: number) {
        torn.push(`${this.ctx.settings.runId} ${timeoutMs}`);
        return { detail: `deleted Job ${this.ctx.settings.jobName}`, mayBeLeft: false };
      }
      stopPresenceSync() {
        left.push(this.ctx.settings.runId);
      }
    }
    const created: CrashableExecutor[] = [];
    const checkout = makeTestTempDir("serve-crash-co-");
    const store = new RunStore(":memory:");
    const crashService = new RunService({
      stateDir: makeTestTempDir("serve-crash-"),
      store,
      defaults: { target: {}, podTimeoutMs: 1000, maxOutputBytes: 1, maxLogBytes: 1 << 20, checkoutRoot: checkout },
      limits: { maxRuns: 2, maxQueued: 2, maxWorkflowBytes: 10_000, maxSecrets: 1, maxSecretBytes: 1 },
      cluster: new KubectlCluster(new Kubectl({ binary: "/nonexistent" })),
      createExecutor: (ctx) => {
        // x2's pod never runs: its setup waits until the run is stopped.
        const executor = new CrashableExecutor(ctx, {
          runStep: g.runStep,
          ...(ctx.settings.runId === "x2" ? { setup: () => untilAborted(ctx.signal).then(() => SCRIPTED_POD) } : {}),
        });
        created.push(executor);
        return executor;
      },
      warn: () => undefined,
    });
    for (const id of ["x1", "x2"])
      await crashService.submit({
        workflow: { name: "ci.yml", text: WORKFLOW },
        checkout: { dir: checkout },
        runId: id,
      });
    for (let i = 0; i < 400 && !store.getRun("x1")?.checkpoint?.includes('"pod":{'); i++)
      await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(crashService.teardownAllNowSync(30_000), [
      `left Job knotless-run-x1 of run x1 for the next start to re-attach to (its pod ${SCRIPTED_POD.name} stops itself once idle for --pod-idle-timeout)`,
      "deleted Job knotless-run-x2",
    ]);
    assert.deepEqual(torn, ["x2 30000"]);
    assert.deepEqual(left, ["x1"]);
    crashService.cancel("x2", "the test");
    await g.release("x1");
    await crashService.whenIdle();
  });

  it("records runs a previous process left pending as failed when it opens the store again (they never had a Job), and a running one without a plan (an older runner's) too", async () => {
    const g = gate();
    const { store, submit, stateDir } = makeService({ maxRuns: 1, script: { runStep: g.runStep } });
    await submit("left");
    await submit("queued");
    store.insertRun(
      {
        runId: "older",
        status: "pending",
        repo: null,
        workflow: "ci.yml",
        jobName: "knotless-run-older",
        target: "{}",
        outDir: join(stateDir, "state", "runs", "older"),
        request: "{}",
        hasSecrets: false,
      },
      new Date().toISOString(),
    );
    store.setStatus("older", "running", new Date().toISOString());
    const again = reopen(store, stateDir);
    const older = await again.getRun("older");
    assert.equal(older.status, "failed");
    assert.match(
      older.reason!,
      /^the service stopped while the run was running: its Job knotless-run-older, if one is left, is deleted by gc once its heartbeat is stale$/,
    );
    const queued = await again.getRun("queued");
    assert.equal(queued.status, "failed");
    assert.equal(queued.reason, "the service stopped before the run started: it never had a Job");
    // A running run with its plan waits for resumeRunning (the service's start) to re-attach to it.
    assert.equal((await again.getRun("left")).status, "running");
    await g.release("left");
  });

  it("re-attaches at start to a run a previous process left running: its executor attaches instead of setting up, the run goes on from its checkpoint's step, one log line says so, and its end is recorded", async () => {
    const g = gate();
    const { store, submit, stateDir } = makeService({ maxRuns: 1, script: { runStep: g.runStep } });
    await submit("left");
    for (let i = 0; i < 400 && !store.getRun("left")?.checkpoint?.includes('"phase":"steps"'); i++)
      await new Promise((r) => setTimeout(r, 5));
    const resumedExecutors: ScriptedExecutor[] = [];
    const again = new RunService({
      stateDir: join(stateDir, "state"),
      store,
      defaults: { target: {}, podTimeoutMs: 1, maxOutputBytes: 1 << 20, maxLogBytes: 1 << 20, checkoutRoot: stateDir },
      limits: { maxRuns: 1, maxQueued: 1, maxWorkflowBytes: 10_000, maxSecrets: 1, maxSecretBytes: 1 },
      cluster: new KubectlCluster(new Kubectl({ binary: "/nonexistent" })),
      createExecutor: (ctx) => {
        const executor = new ScriptedExecutor(ctx, {
          attach: async () => ({
            pod: SCRIPTED_POD,
            state: {
              uploaded: true,
              secrets: false,
              outputsPacked: false,
              steps: new Map([[0, { kind: "running" as const }]]),
            },
            secrets: [],
          }),
        });
        resumedExecutors.push(executor);
        return executor;
      },
      warn: () => undefined,
    });
    assert.deepEqual(again.resumeRunning(), ["left"]);
    await again.whenIdle();
    const run = await again.getRun("left");
    assert.equal(run.status, "success", JSON.stringify(run));
    assert.deepEqual(resumedExecutors[0]!.calls, ["attach", "runStep 0", "runStep 1", "copyOut", "teardown"]);
    const log = readFileSync(join(stateDir, "state", "runs", "left", "log.ndjson"), "utf8");
    assert.equal(log.match(/re-attached to pod/g)?.length, 1);
    assert.equal(store.getRun("left")!.checkpoint, null);
    await g.release("left");
  });

  it("ends a re-attached run failed, runner-lost, when its executor finds the Job gone", async () => {
    const g = gate();
    const { store, submit, stateDir } = makeService({ maxRuns: 1, script: { runStep: g.runStep } });
    await submit("gone");
    for (let i = 0; i < 400 && !store.getRun("gone")?.checkpoint?.includes('"phase":"steps"'); i++)
      await new Promise((r) => setTimeout(r, 5));
    const again = new RunService({
      stateDir: join(stateDir, "state"),
      store,
      defaults: { target: {}, podTimeoutMs: 1, maxOutputBytes: 1 << 20, maxLogBytes: 1 << 20, checkoutRoot: stateDir },
      limits: { maxRuns: 1, maxQueued: 1, maxWorkflowBytes: 10_000, maxSecrets: 1, maxSecretBytes: 1 },
      cluster: new KubectlCluster(new Kubectl({ binary: "/nonexistent" })),
      createExecutor: (ctx) =>
        new ScriptedExecutor(ctx, {
          attach: () =>
            Promise.reject(
              new InfraError(
                "runner-lost",
                "the runner stopped and its run could not be re-attached to: its Job knotless-run-gone is gone",
              ),
            ),
        }),
      warn: () => undefined,
    });
    again.resumeRunning();
    await again.whenIdle();
    const run = (await again.getRun("gone")) as { status: string; result: { errorReason: string; error: string } };
    assert.equal(run.status, "failed");
    assert.equal(run.result.errorReason, "runner-lost");
    assert.match(run.result.error, /its Job knotless-run-gone is gone/);
    await g.release("gone");
  });

  it("says in getRun and listRuns which instance answers for each run: its own, the adopter of a run taken while it was away, and where an adopted run came from", async () => {
    const g = gate();
    const { store, submit, stateDir } = makeService({ maxRuns: 2, script: { runStep: g.runStep } });
    await submit("taken");
    for (let i = 0; i < 400 && !store.getRun("taken")?.checkpoint?.includes('"phase":"steps"'); i++)
      await new Promise((r) => setTimeout(r, 5));
    const attachOnly = (ctx: ConstructorParameters<typeof ScriptedExecutor>[0]) =>
      new ScriptedExecutor(ctx, {
        attach: async () => ({
          pod: SCRIPTED_POD,
          state: { uploaded: true, secrets: false, outputsPacked: false, steps: new Map() },
          secrets: [],
        }),
      });
    const again = new RunService({
      stateDir: join(stateDir, "state"),
      store,
      instance: "a",
      defaults: { target: {}, podTimeoutMs: 1, maxOutputBytes: 1 << 20, maxLogBytes: 1 << 20, checkoutRoot: stateDir },
      limits: { maxRuns: 2, maxQueued: 2, maxWorkflowBytes: 10_000, maxSecrets: 1, maxSecretBytes: 1 },
      cluster: new KubectlCluster(new Kubectl({ binary: "/nonexistent" })),
      createExecutor: attachOnly,
      warn: () => undefined,
    });
    again.markAdoptedElsewhere("taken", "b");
    const plan = store.getRun("taken")!.plan!;
    assert.equal(
      again.adoptRun({
        continuation: { plan: readRunPlan(plan.replaceAll('"taken"', '"from-c"')), repo: null, workflow: "ci" },
        namespace: "ci",
        from: "c",
      }),
      true,
    );
    await again.whenIdle();
    const taken = await again.getRun("taken");
    assert.equal(taken.status, "failed");
    assert.equal(taken.instance, "b");
    assert.equal(taken.adoptedFrom, undefined);
    const adopted = await again.getRun("from-c");
    assert.equal(adopted.instance, "a");
    assert.equal(adopted.adoptedFrom, "c");
    const listed = await again.listRuns({});
    assert.deepEqual(
      listed.runs.map((run) => [run.runId, run.instance, run.adoptedFrom]),
      [
        ["from-c", "a", "c"],
        ["taken", "b", undefined],
      ],
    );
    const lexicons = await loadLexicons();
    lexicons.output("dev.knotless.runner.listRuns", listed);
    await g.release("taken");
  });

  it("refuses a resubmit of a run id that ended because the service stopped, with 409 RunInterrupted, rather than answering its stale status", async () => {
    const g = gate();
    const { store, submit, stateDir, checkout } = makeService({ maxRuns: 1, script: { runStep: g.runStep } });
    await submit("left");
    await submit("queued");
    const again = reopen(store, stateDir);
    await assert.rejects(
      again.submit({ workflow: { name: "ci.yml", text: WORKFLOW }, checkout: { dir: checkout }, runId: "queued" }),
      (error: unknown) => {
        assert.ok(error instanceof XrpcError);
        assert.deepEqual([error.status, error.error], [409, "RunInterrupted"]);
        assert.match(
          error.message,
          /^run queued ended when the service stopped .*: submit it again under a new runId$/,
        );
        return true;
      },
    );
    assert.equal((await again.getRun("queued")).status, "failed");
    await g.release("left");
  });

  it("refuses a run id whose directory exists without a record (409 RunIdTaken) and leaves that directory's files as they were", async () => {
    const { service, store, submit, stateDir } = makeService();
    const old = join(stateDir, "state", "runs", "old");
    mkdirSync(old, { recursive: true });
    writeFileSync(join(old, "result.json"), '{"old": true}\n');
    await assert.rejects(submit("old"), (error: unknown) => {
      assert.ok(error instanceof XrpcError);
      assert.deepEqual([error.status, error.error], [409, "RunIdTaken"]);
      assert.match(error.message, /^run id old is taken: runs\/old exists in the state directory without a record/);
      assert.doesNotMatch(error.message, new RegExp(stateDir));
      return true;
    });
    await service.whenIdle();
    assert.equal(store.getRun("old"), undefined);
    assert.equal(readFileSync(join(old, "result.json"), "utf8"), '{"old": true}\n');
  });

  it("answers getOutputs for a name that is not an artifact directory (its manifest file, a missing one) with 400 ArtifactNotFound before any byte", async () => {
    const { service, submit, stateDir } = makeService();
    await submit("done");
    await service.whenIdle();
    const artifacts = join(stateDir, "state", "runs", "done", "artifacts");
    mkdirSync(join(artifacts, "pkg"), { recursive: true });
    writeFileSync(join(artifacts, "pkg.manifest.json"), "{}\n");
    for (const artifact of ["pkg.manifest.json", "nothing"]) {
      await assert.rejects(
        service.outputs("done", artifact),
        (error: unknown) => error instanceof XrpcError && error.status === 400 && error.error === "ArtifactNotFound",
        artifact,
      );
    }
    const stream = await service.outputs("done", "pkg");
    for await (const _chunk of stream) void _chunk;
  });

  it("names files in getRun and listRuns relative to the run: no reply carries the state directory's host path", async () => {
    const text = [
      "artifacts:",
      "  - name: dist",
      "    paths: [dist]",
      "steps:",
      "  - name: build",
      "    command: make",
      "",
    ].join("\n");
    const { service, submit, stateDir } = makeService({
      script: {
        collectArtifact: async (spec, _max, ctx) => {
          const dir = join(ctx.settings.outDir, "artifacts", spec.name);
          mkdirSync(dir, { recursive: true });
          writeFileSync(join(dir, "a.txt"), "a");
          writeFileSync(join(ctx.settings.outDir, "artifacts", `${spec.name}.manifest.json`), "{}\n");
          return {
            name: spec.name,
            status: "collected",
            files: [{ path: "a.txt", size: 1, sha256: "0".repeat(64) }],
            manifest: join(ctx.settings.outDir, "artifacts", `${spec.name}.manifest.json`),
            reason: `kept under ${dir}`,
          };
        },
      },
    });
    await submit("paths", { workflow: { name: "ci.yml", text } });
    await service.whenIdle();
    const view = await service.getRun("paths");
    assert.equal(view.status, "success");
    const artifact = (view.result as { artifacts: Array<{ manifest: string; reason: string }> }).artifacts[0]!;
    assert.equal(artifact.manifest, "artifacts/dist.manifest.json");
    assert.equal(artifact.reason, "kept under artifacts/dist");
    for (const reply of [view, await service.listRuns({})])
      assert.doesNotMatch(JSON.stringify(reply), new RegExp(stateDir));
  });

  it("restores and saves a workflow's caches in the --cache-dir store, per the trigger's repository", async () => {
    const cacheDir = makeTestTempDir("serve-cache-");
    // What the pod's tar would pack: the cache's path as the pod names it (work/deps), gzipped, so that the restore's gate passes it.
    const tree = makeTestTempDir("serve-cache-tree-");
    mkdirSync(join(tree, "work", "deps"), { recursive: true });
    writeFileSync(join(tree, "work", "deps", "lib.txt"), "cached\n");
    const archive = execFileSync("tar", ["-C", tree, "-czf", "-", "work/deps"]);
    const { service, submit } = makeService({
      cacheDir,
      script: {
        saveCache: async (_spec, writer) => {
          writer.stream.end(archive);
          return { status: await writer.commit(), bytes: archive.length, missing: [] };
        },
      },
    });
    const text = [
      "caches:",
      "  - key: deps-v1",
      "    paths: [deps]",
      "steps:",
      "  - name: build",
      "    command: make",
      "",
    ].join("\n");
    await submit("c1", { workflow: { name: "ci.yml", text } });
    await service.whenIdle();
    await submit("c2", { workflow: { name: "ci.yml", text } });
    await service.whenIdle();
    const caches = async (id: string) =>
      (
        (await service.getRun(id)).result as {
          caches: Array<{ restore: { status: string }; save: { status: string } }>;
        }
      ).caches[0]!;
    assert.deepEqual([(await caches("c1")).restore.status, (await caches("c1")).save.status], ["miss", "saved"]);
    assert.equal((await caches("c2")).restore.status, "exact");
  });

  describe("with a git checkout", () => {
    const git = (cwd: string, ...args: string[]): string =>
      execFileSync("git", ["-c", "user.email=t@t", "-c", "user.name=t", ...args], { cwd, encoding: "utf8" }).trim();
    const repo = makeTestTempDir("serve-git-");
    git(repo, "init", "-q");
    writeFileSync(join(repo, "file.txt"), "first\n");
    git(repo, "add", "file.txt");
    git(repo, "commit", "-q", "-m", "first");
    const first = git(repo, "rev-parse", "HEAD");
    writeFileSync(join(repo, "file.txt"), "second\n");
    git(repo, "commit", "-q", "-am", "second");
    const second = git(repo, "rev-parse", "HEAD");
    // The service clones only http(s) URLs: the repository served over HTTP, the service told --allow-http-git.
    let server: GitHttpServer;
    let url: string;
    before(async () => {
      server = await startGitHttpServer(dirname(repo));
      url = `${server.url}/${basename(repo)}`;
    });
    after(() => server.stop());

    it("clones the asked commit, at depth 1 unless asked, into the run's checkout before the run starts, and removes it after", async () => {
      const seen = new Map<string, { file: string; head: string; count: string }>();
      const { service, submit, stateDir, executors } = makeService({
        script: {
          copyIn: async (ctx) => {
            const dir = ctx.settings.checkoutDir;
            seen.set(ctx.settings.runId, {
              file: readFileSync(join(dir, "file.txt"), "utf8"),
              head: git(dir, "rev-parse", "HEAD"),
              count: git(dir, "rev-list", "--count", "HEAD"),
            });
            return { files: 1, bytes: 1, archiveBytes: 2048, entries: 1 };
          },
        },
      });
      await submit("g1", { checkout: { git: { url, sha: first } } });
      await submit("g2", { checkout: { git: { url, sha: second, depth: 2 } } });
      await service.whenIdle();
      assert.deepEqual(seen.get("g1"), { file: "first\n", head: first, count: "1" });
      assert.deepEqual(seen.get("g2"), { file: "second\n", head: second, count: "2" });
      assert.equal((await service.getRun("g1")).status, "success");
      // The two clones race: each run's executor is made once its own clone is done.
      assert.equal(
        executors.find((executor) => executor.ctx.settings.runId === "g1")!.ctx.settings.checkoutDir,
        join(stateDir, "state", "runs", "g1", "checkout"),
      );
      assert.equal(existsSync(join(stateDir, "state", "runs", "g1", "checkout")), false);
    });

    it("fails the run as checkout-failed when the commit cannot be fetched on the host, its clone phase saying why, no step run and the Job torn down", async () => {
      const { service, submit, stateDir, executors } = makeService();
      await submit("gone", { checkout: { git: { url, sha: "0".repeat(40) } } });
      await service.whenIdle();
      const view = await service.getRun("gone");
      assert.equal(view.status, "failed");
      assert.equal((view.result as { errorReason: string }).errorReason, "checkout-failed");
      assert.deepEqual(executors[0]!.calls, ["setup", "teardown"]);
      const lines = readFileSync(join(stateDir, "state", "runs", "gone", "log.ndjson"), "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { name?: string; status?: string; ok?: boolean; detail?: string });
      const end = lines.find((line) => line.name === "clone" && line.status === "end");
      assert.equal(end?.ok, false);
      assert.match(
        end?.detail ?? "",
        /^git fetch failed \(exit 128\): [\s\S]*not our ref[\s\S]* \(cloning on the host: the image has no git\)$/,
      );
    });

    it("refuses a URL with a password, an unknown scheme and a short sha before anything is recorded", async () => {
      const { store, submit } = makeService();
      const marker = join(makeTestTempDir("serve-ext-"), "x");
      for (const git of [
        { url: "https://u:p@example.com/r.git", sha: first },
        { url: `ext::sh -c touch% ${marker}`, sha: first },
        { url: "https://example.com/r.git", sha: "abc123" },
      ]) {
        await assert.rejects(submit("refused", { checkout: { git } }), /checkout\.git/);
      }
      assert.equal(store.getRun("refused"), undefined);
      assert.equal(existsSync(marker), false);
    });
  });
});
