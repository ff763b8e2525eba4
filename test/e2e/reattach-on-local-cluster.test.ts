// A run survives its runner: `serve` killed with SIGKILL mid-step and started again on the same state directory re-attaches to the run's pod.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { NSID } from "../../src/serve/lexicon-schemas.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason, waitUntil } from "../support/local-cluster-e2e.js";
import { REPO_ROOT } from "../support/run-cli.js";
import { createServeClient, type ServeClient } from "../support/serve-client.js";
import {
  buildLocalServeArgs,
  startServeProcess,
  writeServeToken,
  type ServeProcess,
} from "../support/serve-process.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const skip = findPodmanSkipReason();
const KUBECTL = E2E_KUBECTLS.at(-1) ?? "kubectl";
const TOKEN = "e2e-reattach-token-16+";
const CLI = join(REPO_ROOT, "bin", "knotless-runner-k8s.js");
const SECRET = "hunter2-reattach-secret-value";
/** A module for `node --import` that throws an uncaught exception from a timer on SIGUSR2: a crash with no hook in the product. */
const CRASH_ON_SIGNAL = pathToFileURL(join(REPO_ROOT, "dist", "test", "support", "crash-on-signal.js")).href;

/** Prints a line a second, the secret twice (before and after any restart), then a second step. */
const WORKFLOW = `steps:
  - name: count
    command: "for i in 1 2 3 4 5 6 7 8 9 10; do echo line $i; if [ $i = 2 ] || [ $i = 9 ]; then echo \\"secret $TOKEN_X\\"; fi; sleep 1; done; echo out > /outputs/out.txt"
  - name: after
    command: "echo second step sees $TOKEN_X"
`;

/** serve with a short heartbeat, as these tests need. */
const startServe = (args: readonly string[], nodeArgs: readonly string[] = []): Promise<ServeProcess> =>
  startServeProcess(args, { KNOTLESS_HEARTBEAT_INTERVAL: "5s" }, nodeArgs);

/** What the tests read of a getRun answer. */
interface RunBody {
  readonly status: string;
  readonly result: {
    readonly steps: ReadonlyArray<{ readonly status: string; readonly exitCode: number }>;
    readonly outputs: unknown;
    readonly logs: unknown;
  };
}

interface LogLine {
  readonly kind: string;
  readonly step: number;
  readonly status?: string;
  readonly name?: string;
  readonly stream?: string;
  readonly content?: string;
  readonly event?: string;
  readonly stepStatus?: string;
  readonly exitCode?: number | null;
}

function readLog(runDir: string): LogLine[] {
  return readFileSync(join(runDir, "log.ndjson"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as LogLine);
}

/**
 * A log's shape without its times: the runner's lines in order (cluster calls and the pod wait's progress reports,
 * whose number depends on timing, left out; the run id made generic), and each step stream's output whole (its
 * chunking depends on timing too).
 */
function shapeOf(lines: readonly LogLine[], runId: string): { events: string[]; output: Record<string, string> } {
  const events: string[] = [];
  const output: Record<string, string> = {};
  for (const line of lines) {
    // Their number depends on timing in any two runs: the calls, and the pod wait's progress reports.
    if (line.event === "api-call" || line.event === "kubectl" || line.event === "pod-progress") continue;
    if (line.kind === "data" && line.step >= 0) {
      const key = `${line.step}/${line.stream}`;
      output[key] = (output[key] ?? "") + line.content;
      continue;
    }
    const what =
      line.kind === "control"
        ? `${line.step} ${line.status} ${line.name} ${line.stepStatus ?? ""} ${line.exitCode ?? ""}`
        : `${line.event}`;
    events.push(what.replaceAll(runId, "RUN"));
  }
  return { events, output };
}

/** Every file under `dir`, recursively. */
function listFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? listFiles(path) : [path];
  });
}

describe("a run survives its runner on the local cluster", { skip, concurrency: 1, timeout: 600_000 }, () => {
  let cluster: LocalCluster;
  const dir = makeTestTempDir("reattach-e2e-");
  const checkout = join(dir, "checkout");
  mkdirSync(checkout);
  writeFileSync(join(checkout, "README"), "a checkout\n");
  const tokenFile = writeServeToken(dir, TOKEN);
  const stateDir = join(dir, "state");
  const serveArgs = (): string[] =>
    buildLocalServeArgs({ dir, stateDir, tokenFile, kubeconfig: cluster.kubeconfigPath, kubectl: KUBECTL });
  let serve: ServeProcess | undefined;
  let client: ServeClient;
  const submit = (runId: string) =>
    client.call(NSID.submitRun, {
      body: {
        workflow: { name: ".tangled/workflows/ci.yml", text: WORKFLOW },
        checkout: { dir: checkout },
        trigger: { event: "push", ref: "refs/heads/main", repo: "did:plc:e2e/repo" },
        secrets: [{ name: "TOKEN_X", value: SECRET }],
        runId,
      },
    });
  const waitOver = (runId: string) =>
    waitUntil(
      `run ${runId} over`,
      async () => !["pending", "running"].includes((await client.call(NSID.getRun, { params: { runId } })).body.status),
      180_000,
    );
  const waitForLine = (runId: string, text: string) =>
    waitUntil(
      `run ${runId} printed ${text}`,
      () => {
        try {
          return readFileSync(join(stateDir, "runs", runId, "log.ndjson"), "utf8").includes(text);
        } catch {
          return false;
        }
      },
      120_000,
    );

  /** The workflow's run, uninterrupted, made once for the tests that compare with it. */
  let reference: Promise<RunBody> | undefined;
  const referenceRun = (): Promise<RunBody> =>
    (reference ??= (async () => {
      assert.equal((await submit("reference")).status, 200);
      await waitOver("reference");
      const body = (await client.call(NSID.getRun, { params: { runId: "reference" } })).body as RunBody;
      assert.equal(body.status, "success", JSON.stringify(body));
      return body;
    })());

  /**
   * Asserts that re-attached run `runId` ended as `reference` did: its status, steps, outputs and logs, and its
   * log.ndjson the reference's but for times and its one re-attach line; returns its log's shape.
   */
  const assertLikeReference = async (runId: string, reference: RunBody) => {
    const run = (await client.call(NSID.getRun, { params: { runId } })).body as RunBody;
    assert.equal(run.status, "success", JSON.stringify(run));
    assert.deepEqual(
      run.result.steps.map((step) => [step.status, step.exitCode]),
      reference.result.steps.map((step) => [step.status, step.exitCode]),
    );
    assert.deepEqual(run.result.outputs, reference.result.outputs);
    assert.deepEqual(run.result.logs, reference.result.logs);
    const lines = readLog(join(stateDir, "runs", runId));
    const reattached = lines.filter((line) => /re-attached to pod/.test(line.content ?? ""));
    assert.equal(reattached.length, 1, "one line says the runner re-attached");
    const expected = shapeOf(readLog(join(stateDir, "runs", "reference")), "reference");
    const got = shapeOf(
      lines.filter((line) => line !== reattached[0]),
      runId,
    );
    assert.deepEqual(got.events, expected.events);
    assert.deepEqual(got.output, expected.output);
    return got;
  };

  before(async () => {
    cluster = await startLocalCluster({ imageBackOffSeconds: 1 });
    serve = await startServe(serveArgs());
    client = await createServeClient(serve.url, TOKEN);
  });
  after(async () => {
    serve?.child.kill("SIGTERM");
    await serve?.exited;
    await cluster?.stop();
  });

  it("re-attaches after a SIGKILL mid-step: the uninterrupted run's result and log but for the re-attach line, the secret masked and in no file of the state directory; a run whose pod was deleted meanwhile ends runner-lost", async () => {
    const reference = await referenceRun();

    assert.equal((await submit("survivor")).status, 200);
    assert.equal((await submit("orphan")).status, 200);
    await waitForLine("survivor", "line 4");
    await waitForLine("orphan", "line 4");
    serve!.child.kill("SIGKILL");
    await serve!.exited;
    // The orphan's pod goes while no runner watches: the restart finds its Job's pod ended.
    const pods = cluster.objects("pods");
    const orphanPod = pods.find((pod) => JSON.stringify(pod.metadata.labels ?? {}).includes("orphan"));
    assert.ok(orphanPod, `the orphan's pod among ${pods.map((pod) => pod.metadata.name).join(", ")}`);
    // Not execFileSync: the local cluster's API server answers from this very process.
    await promisify(execFile)(KUBECTL, [
      "--kubeconfig",
      cluster.kubeconfigPath,
      "delete",
      "pod",
      orphanPod.metadata.name,
      "-n",
      orphanPod.metadata.namespace ?? "default",
      "--wait=true",
    ]);
    await new Promise((resolve) => setTimeout(resolve, 2000)); // the survivor's step prints on meanwhile
    serve = await startServe(serveArgs());
    client = await createServeClient(serve.url, TOKEN);
    await waitOver("survivor");
    await waitOver("orphan");

    const got = await assertLikeReference("survivor", reference);
    // The secret printed after the restart (line 9) is masked like the one before it.
    assert.match(got.output["0/stdout"]!, /line 9\nsecret \*\*\*\n/);
    assert.match(got.output["1/stdout"]!, /second step sees \*\*\*/);
    for (const file of listFiles(stateDir)) assert.ok(!readFileSync(file).includes(SECRET), `${file} holds the secret`);

    const orphan = (await client.call(NSID.getRun, { params: { runId: "orphan" } })).body;
    assert.equal(orphan.status, "failed");
    assert.equal(orphan.result.errorReason, "runner-lost");
    assert.match(
      orphan.result.error,
      /could not be re-attached to: its (pod \S+ (has ended|is gone)|Job \S+ (is gone|has no pod))/,
    );

    await assertNothingLeft(cluster);
  });

  it("re-attaches after a crash (an uncaught exception) mid-step: serve exits 3 saying internal error and that it left the Job, which is still there; the next start ends the run with the uninterrupted run's result and log but for the re-attach line; nothing is left", async () => {
    const reference = await referenceRun();
    // The service is started again with a module that throws from a timer on SIGUSR2: the product has no crash hook.
    if (serve) {
      serve.child.kill("SIGTERM");
      assert.equal((await serve.exited).code, 0, serve.output());
    }
    serve = await startServe(serveArgs(), ["--import", CRASH_ON_SIGNAL]);
    client = await createServeClient(serve.url, TOKEN);
    assert.equal((await submit("crashed")).status, 200);
    await waitForLine("crashed", "line 4");
    serve.child.kill("SIGUSR2");
    assert.equal((await serve.exited).code, 3, serve.output());
    assert.match(serve.output(), /internal error: Error: injected crash/);
    const left = /left Job (\S+) of run crashed for the next start to re-attach to/.exec(serve.output());
    assert.ok(left, `serve said it left the Job: ${serve.output()}`);
    assert.deepEqual(
      cluster.objects("jobs.batch").map((job) => job.metadata.name),
      [left[1]],
      "the crashed run's Job is still there",
    );
    assert.equal(cluster.objects("pods").length, 1, "its pod too");

    serve = await startServe(serveArgs());
    client = await createServeClient(serve.url, TOKEN);
    await waitOver("crashed");
    const got = await assertLikeReference("crashed", reference);
    assert.match(got.output["0/stdout"]!, /line 9\nsecret \*\*\*\n/);
    await assertNothingLeft(cluster);
  });

  it("re-attaches after a SIGKILL during the upload, the outputs' download and a cache save: each run ends with an uninterrupted run's result", async () => {
    const big = join(dir, "big");
    mkdirSync(big);
    for (let i = 0; i < 40; i += 1) writeFileSync(join(big, `blob-${i}`), randomBytes(1 << 20));
    const cases = [
      { runId: "in-upload", phase: "upload", checkout: big, command: "echo small > /outputs/a.txt" },
      {
        runId: "in-download",
        phase: "download",
        checkout,
        command: "head -c 60000000 /dev/urandom > /outputs/big.bin",
      },
    ];
    for (const { runId, phase, checkout: dirOf, command } of cases) {
      const text = `steps:\n  - name: main\n    command: ${JSON.stringify(command)}\n`;
      const answer = await client.call(NSID.submitRun, {
        body: { workflow: { name: ".tangled/workflows/ci.yml", text }, checkout: { dir: dirOf }, runId },
      });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      await waitForLine(runId, `"status":"start","stepKind":"system","name":"${phase}"`);
      serve!.child.kill("SIGKILL");
      await serve!.exited;
      serve = await startServe(serveArgs());
      client = await createServeClient(serve.url, TOKEN);
      await waitOver(runId);
      const run = (await client.call(NSID.getRun, { params: { runId } })).body;
      assert.equal(run.status, "success", JSON.stringify(run));
      const lines = readLog(join(stateDir, "runs", runId));
      const reattached = lines.filter((line) => /re-attached to pod/.test(line.content ?? ""));
      assert.equal(reattached.length, 1, "one line says the runner re-attached");
      // The phase the kill cut is made again, once in the log after the cut.
      const starts = lines.filter((line) => line.name === phase && line.status === "start");
      assert.equal(starts.length, 1, `one ${phase} phase in the log`);
      assert.ok(lines.indexOf(reattached[0]!) < lines.indexOf(starts[0]!), `the ${phase} phase after the re-attach`);
      if (runId === "in-download") {
        const outputs = run.result.outputs as Array<{ path: string; size: number }>;
        assert.deepEqual(
          outputs.filter((file) => file.path.endsWith("big.bin")).map((file) => file.size),
          [60_000_000],
          JSON.stringify(outputs),
        );
      }
    }
    // A save of 60 MB, killed once the step has ended: the save is made again, and the run is an uninterrupted one.
    const cached = [
      "caches:",
      "  - key: big-1",
      "    paths: [big]",
      "steps:",
      "  - name: main",
      '    command: "mkdir -p big && head -c 60000000 /dev/urandom > big/blob"',
      "",
    ].join("\n");
    const answer = await client.call(NSID.submitRun, {
      body: {
        workflow: { name: ".tangled/workflows/ci.yml", text: cached },
        checkout: { dir: checkout },
        trigger: { event: "push", ref: "refs/heads/main", repo: "did:plc:e2e/cached" },
        runId: "in-save",
      },
    });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    await waitForLine("in-save", `"status":"end","stepKind":"user"`);
    serve!.child.kill("SIGKILL");
    await serve!.exited;
    serve = await startServe(serveArgs());
    client = await createServeClient(serve.url, TOKEN);
    await waitOver("in-save");
    const saved = (await client.call(NSID.getRun, { params: { runId: "in-save" } })).body;
    assert.equal(saved.status, "success", JSON.stringify(saved));
    assert.equal(saved.result.caches[0].save.status, "saved", JSON.stringify(saved.result.caches));
    const savedLog = readLog(join(stateDir, "runs", "in-save"));
    assert.equal(savedLog.filter((line) => /re-attached to pod/.test(line.content ?? "")).length, 1);
    assert.equal(savedLog.filter((line) => line.event === "cache-save").length, 1, "one save in the log");
    serve!.child.kill("SIGTERM");
    assert.equal((await serve!.exited).code, 0, serve!.output());
    serve = undefined;
    await assertNothingLeft(cluster);
  });

  it("run --resume finishes the run a SIGKILLed run left in its --out directory", async () => {
    const out = join(dir, "run-out");
    const workflowFile = join(dir, "ci.yml");
    writeFileSync(workflowFile, WORKFLOW);
    const secretsFile = join(dir, "secrets.env");
    writeFileSync(secretsFile, `TOKEN_X=${SECRET}\n`, { mode: 0o600 });
    const cli = (args: readonly string[]) =>
      spawn(process.execPath, [CLI, "run", ...args], {
        env: { ...process.env, KNOTLESS_HEARTBEAT_INTERVAL: "5s" },
        stdio: ["ignore", "pipe", "pipe"],
      });
    const first = cli([
      "--workflow",
      workflowFile,
      "--checkout",
      checkout,
      "--out",
      out,
      "--secrets",
      secretsFile,
      "--kubeconfig",
      cluster.kubeconfigPath,
      "--skip-warm",
      "--run-id",
      "resumed",
    ]);
    const firstExit = new Promise((resolve) => first.on("close", resolve));
    await waitUntil(
      "the run printed line 4",
      () => {
        try {
          return readFileSync(join(out, "log.ndjson"), "utf8").includes("line 4");
        } catch {
          return false;
        }
      },
      120_000,
    );
    first.kill("SIGKILL");
    await firstExit;
    const second = cli(["--resume", out, "--kubeconfig", cluster.kubeconfigPath]);
    let said = "";
    second.stderr!.setEncoding("utf8").on("data", (text: string) => (said += text));
    const code = await new Promise((resolve) => second.on("close", resolve));
    assert.equal(code, 0, said);
    const result = JSON.parse(readFileSync(join(out, "result.json"), "utf8"));
    assert.equal(result.status, "success");
    const lines = readLog(out);
    assert.equal(lines.filter((line) => /re-attached to pod/.test(line.content ?? "")).length, 1);
    const { output } = shapeOf(lines, "resumed");
    assert.equal(
      output["0/stdout"],
      "line 1\nline 2\nsecret ***\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nsecret ***\nline 10\n",
    );
    for (const name of ["plan.json", "checkpoint.json"])
      assert.throws(() => statSync(join(out, name)), /ENOENT/, `${name} is removed with the result`);
    for (const file of listFiles(out)) assert.ok(!readFileSync(file).includes(SECRET), `${file} holds the secret`);
    await assertNothingLeft(cluster);
  });
});
