// doctor, cancel from another process, gc and list through the real CLI on the local cluster: the default (api) transport, and doctor and cancel also through the real kubectl.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { startLocalCluster, type LocalCluster } from "../../local-cluster/index.js";
import { makeWorkspace, readResult, runCli, startCli } from "../support/run-cli.js";
import { assertNothingLeft, E2E_KUBECTLS, findPodmanSkipReason, waitUntil } from "../support/local-cluster-e2e.js";
import { makeTestTempDir } from "../support/temp-dir.js";

/** Async on purpose: the cluster serves from this process, so a synchronous call would deadlock. */
const execFileAsync = promisify(execFile);
const skip =
  E2E_KUBECTLS.length === 0 ? "no kubectl 1.30 or 1.33 under /usr/lib/google-cloud-sdk/bin" : findPodmanSkipReason();
/** A transport as the tests name it: "api", or the path of a real kubectl for --transport kubectl. */
const name = (via: string): string => via.split("/").pop()!;
const transportArgs = (via: string): string[] =>
  via === "api" ? ["--transport", "api"] : ["--transport", "kubectl", "--kubectl", via];

/** A step that leaves an output, says so, and then waits with a child of its own. */
const WAITING_STEP =
  "wait\techo before > /outputs/before.txt; (sleep 301; echo late > /outputs/late.txt) & echo step-waits; sleep 300\n";

describe("operating the runner on the local cluster", { skip, concurrency: 1, timeout: 900_000 }, () => {
  let cluster: LocalCluster;
  before(async () => {
    cluster = await startLocalCluster({});
  });
  after(async () => {
    await cluster?.stop();
  });
  const cli = (via: string, args: readonly string[], env: Record<string, string> = {}) =>
    runCli([...args, "--kubeconfig", cluster.kubeconfigPath, ...transportArgs(via)], { env });
  const runArgs = (ws: ReturnType<typeof makeWorkspace>, runId: string, via: string): string[] => [
    "run",
    "--checkout",
    ws.checkout,
    "--steps",
    ws.stepsFile,
    "--out",
    ws.out,
    "--run-id",
    runId,
    "--kubeconfig",
    cluster.kubeconfigPath,
    ...transportArgs(via),
  ];

  for (const via of ["api", ...E2E_KUBECTLS]) {
    it(`doctor passes a healthy cluster through ${name(via)}, in text and JSON`, async () => {
      cluster.setFaults({});
      const text = await cli(via, ["doctor"]);
      assert.equal(text.code, 0, text.stdout + text.stderr);
      for (const check of [
        via === "api" ? "transport" : "kubectl",
        "cluster",
        "namespace",
        "permission jobs.batch",
        "permission pods/exec",
        "nodes",
      ]) {
        assert.match(
          text.stdout,
          new RegExp(`^(ok|warn) +${check.replace(/[./]/g, "\\$&")} `, "m"),
          `${check}:\n${text.stdout}`,
        );
      }
      assert.match(text.stdout, /^ok +permission jobs\.batch +create, delete, get, list, patch, watch in default$/m);
      assert.match(
        text.stdout,
        /^warn +credential +user local-admin; .*cluster-admin/m,
        "the local cluster's admin is warned of",
      );
      assert.match(text.stdout, /^ok +nodes +1 node, 1 ready$/m);
      const json = await cli(via, ["doctor", "--json"]);
      assert.equal(json.code, 0);
      const report = JSON.parse(json.stdout) as {
        ok: boolean;
        namespace: string;
        checks: Array<{ name: string; status: string }>;
      };
      assert.equal(report.ok, true);
      assert.equal(report.namespace, "default");
      assert.ok(
        report.checks.every((c) => c.status === "ok" || c.status === "warn"),
        json.stdout,
      );
    });
  }

  it("doctor fails fast, skipping the rest, against a stopped server and a closed port", async () => {
    const via = "api";
    cluster.setFaults({ serverDown: {} });
    const started = Date.now();
    const down = await cli(via, ["doctor"]);
    const tookMs = Date.now() - started;
    cluster.setFaults({});
    assert.equal(down.code, 3, down.stdout + down.stderr);
    assert.match(down.stdout, /^fail +cluster +not reachable at http:\/\/127\.0\.0\.1:\d+: .*refused/m);
    assert.match(down.stdout, /^skip +namespace +the cluster cannot be reached$/m);
    assert.ok(tookMs < 15_000, `${tookMs} ms`);
    const closed = join(makeTestTempDir("doctor-closed-"), "kubeconfig");
    writeFileSync(
      closed,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]",
        "users: [{name: u, user: {}}]",
        "contexts: [{name: x, context: {cluster: c, user: u}}]",
        "current-context: x",
        "",
      ].join("\n"),
    );
    const port = await runCli(["doctor", "--kubeconfig", closed, ...transportArgs(via), "--json"]);
    assert.equal(port.code, 3);
    const report = JSON.parse(port.stdout) as { ok: boolean; checks: Array<{ name: string; status: string }> };
    assert.equal(report.ok, false);
    assert.equal(report.checks.find((c) => c.name === "cluster")?.status, "fail");
  });

  it("doctor fails a namespace that does not exist", async () => {
    cluster.setFaults({});
    const result = await cli("api", ["doctor", "--namespace", "no-such-namespace"]);
    assert.equal(result.code, 3);
    assert.match(result.stdout, /^fail +namespace +no-such-namespace does not exist: create it, or pass --namespace$/m);
  });

  // Through api and the older kubectl here; the newer one's cancel is in kubectl-transport-on-local-cluster.
  for (const via of ["api", ...E2E_KUBECTLS.slice(0, 1)]) {
    it(`cancel from another process stops a run mid-step through ${name(via)}: exit 130 within 5 s, outputs collected, nothing left`, async (t) => {
      cluster.setFaults({});
      const ws = makeWorkspace(WAITING_STEP);
      const runId = `cancel-${name(via).replace(/\./g, "-")}`;
      const run = startCli(runArgs(ws, runId, via));
      await run.waitFor(/^step-waits$/m);
      const cancel = await cli(via, ["cancel", runId]);
      const cancelReturnedAt = Date.now();
      assert.equal(cancel.code, 0, cancel.stderr);
      assert.match(
        cancel.stdout,
        new RegExp(
          `^cancel requested for run ${runId} \\(Job default/knotless-run-${runId}\\): its runner \\d+@\\S+ stops the step`,
        ),
      );
      const ended = await run.exited;
      const latencyMs = ended.endedAt - cancelReturnedAt;
      assert.equal(ended.code, 130, ended.stderr);
      // Three execs in a row (kill, pack-outputs, delete) and podman behind them: ~2 s here at a normal load.
      // A machine whose load is several times its CPUs (other work on it) starves them all; the bound is then only
      // reported, not asserted, so that the test says something about the runner rather than about the neighbours.
      const load = loadavg()[0]!;
      const starved = load > 2 * cpus().length;
      if (starved)
        t.diagnostic(
          `load ${load.toFixed(1)} on ${cpus().length} CPUs: the 5 s bound is not asserted (${latencyMs} ms)`,
        );
      else
        assert.ok(
          latencyMs < 5000,
          `the run exited ${latencyMs} ms after the cancel returned (load ${load.toFixed(1)})`,
        );
      const result = readResult(ws.out);
      assert.equal(result.status, "cancelled");
      assert.match(result.error ?? "", /^cancel requested through the cluster by \d+@\S+ at /);
      assert.deepEqual(
        result.steps.map((s) => s.status),
        ["cancelled"],
      );
      assert.equal(
        readFileSync(join(ws.out, "outputs", "before.txt"), "utf8"),
        "before\n",
        "what the step wrote before the cancel is collected",
      );
      assert.deepEqual(
        [...result.outputs].map((o) => o.path),
        ["before.txt"],
      );
      assert.match(
        readFileSync(join(ws.out, "run.log"), "utf8"),
        /step 1 \(wait\): its processes in the pod are stopped/,
      );
      t.diagnostic(`cancel latency through ${name(via)}: ${latencyMs} ms from the cancel's return to the run's exit`);
      await assertNothingLeft(cluster);
    });
  }

  it("a cancelled step has no process left in its pod (kept to look inside)", async () => {
    cluster.setFaults({});
    const ws = makeWorkspace(WAITING_STEP);
    const run = startCli([...runArgs(ws, "cancel-kept", "api"), "--keep"]);
    await run.waitFor(/^step-waits$/m);
    assert.equal((await cli("api", ["cancel", "cancel-kept"])).code, 0);
    assert.equal((await run.exited).code, 130);
    try {
      const container = (await cluster.podmanContainers()).find(
        (c) => c.includes("cancel-kept") && !c.endsWith("-infra"),
      );
      assert.ok(container, "the kept pod's container");
      const { stdout: ps } = await execFileAsync("podman", ["exec", container!, "ps", "-o", "pid,args"], {
        encoding: "utf8",
      });
      assert.doesNotMatch(ps, /sleep 30[01]/, ps);
      const list = await cli("api", ["list"]);
      assert.match(list.stdout, /^cancel-kept +run +(kept|cancelling) /m, list.stdout);
    } finally {
      await execFileAsync(E2E_KUBECTLS[0]!, [
        "--kubeconfig",
        cluster.kubeconfigPath,
        "delete",
        "job",
        "knotless-run-cancel-kept",
        "--cascade=background",
      ]);
    }
    await assertNothingLeft(cluster);
  });

  it("cancel of a run that is not running says so and exits 0", async () => {
    const result = await cli("api", ["cancel", "never-started"]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      result.stdout,
      "no run never-started is running in the kubeconfig context's namespace (no Job knotless-run-never-started); nothing to cancel\n",
    );
    const pinned = await cli("api", ["cancel", "never-started", "--namespace", "ci"]);
    assert.match(pinned.stdout, /in namespace ci/);
  });

  it("list shows the runs; gc spares the live one and removes the one whose runner was killed with SIGKILL", async () => {
    cluster.setFaults({});
    const via = "api";
    const env = { KNOTLESS_HEARTBEAT_INTERVAL: "1s" };
    const live = startCli(runArgs(makeWorkspace(WAITING_STEP), "gc-live", via), { env });
    const doomedWs = makeWorkspace(WAITING_STEP);
    const doomed = startCli(runArgs(doomedWs, "gc-killed", via), { env });
    await Promise.all([live.waitFor(/^step-waits$/m), doomed.waitFor(/^step-waits$/m)]);
    const list = await cli(via, ["list"], env);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^RUN ID +ROLE +PHASE +AGE +HEARTBEAT +OWNER +INSTANCE +NODE +LEFT +POD ENDED$/m);
    assert.match(
      list.stdout,
      new RegExp(`^gc-live +run +running +\\S+ +\\S+ +${live.pid}@\\S+ +- +local-node-1 +- +-$`, "m"),
      list.stdout,
    );
    const json = JSON.parse((await cli(via, ["list", "--json"], env)).stdout) as {
      namespace: string;
      jobs: Array<{ runId: string; phase: string; owner: string; node: string; heartbeatAgeMs: number }>;
    };
    assert.equal(json.namespace, "default");
    assert.deepEqual(json.jobs.map((j) => j.runId).sort(), ["gc-killed", "gc-live"]);
    assert.ok(
      json.jobs.every((j) => j.phase === "running" && j.node === "local-node-1" && j.heartbeatAgeMs < 30_000),
      JSON.stringify(json),
    );

    doomed.kill("SIGKILL");
    await doomed.exited;
    // The killed run's heartbeat goes stale; the live one's is refreshed every second. The window is far wider than
    // its minimum (twice the interval, 2 s): on a loaded CI machine a live run's heartbeat was once seen 7 s old.
    await new Promise((r) => setTimeout(r, 11_000));
    const refused = await cli(via, ["gc", "--stale-after", "1s"], env);
    assert.equal(refused.code, 2, "below twice the heartbeat interval");
    assert.equal(
      (await cli(via, ["gc", "--stale-after", "2s", "--dry-run"], env)).code,
      0,
      "twice the interval is accepted",
    );
    const dry = await cli(via, ["gc", "--stale-after", "10s", "--dry-run"], env);
    assert.match(dry.stdout, /^would remove +run gc-killed /m);
    assert.equal(cluster.objects("jobs.batch").length, 2, "a dry run removes nothing");
    const gc = await cli(via, ["gc", "--stale-after", "10s"], env);
    assert.equal(gc.code, 0, gc.stdout + gc.stderr);
    assert.match(
      gc.stdout,
      /^removed +run gc-killed \(Job knotless-run-gc-killed\): heartbeat \S+ ago, stale after 10.0s: its runner is gone, owner \d+@\S+$/m,
      gc.stdout,
    );
    assert.match(
      gc.stdout,
      /^spared +run gc-live \(Job knotless-run-gc-live\): heartbeat \S+ ago: its runner is alive/m,
      gc.stdout,
    );
    assert.match(gc.stdout, /^gc in namespace default: 1 removed, 1 spared$/m);
    await waitUntil("the killed run's Job gone", () => cluster.objects("jobs.batch").length === 1, 10_000);
    // The killed runner's cancel watch, orphaned, ends once it sees its Job deleted (its reader is gone).
    await waitUntil(
      "no process of the killed run left",
      async () => !(await listProcesses()).some((line) => line.includes("knotless-run-gc-killed")),
      15_000,
    );

    assert.equal((await cli(via, ["cancel", "gc-live"])).code, 0);
    assert.equal((await live.exited).code, 130);
    await assertNothingLeft(cluster);
    assert.equal(existsSync(join(doomedWs.out, "result.json")), false, "a runner killed with SIGKILL writes nothing");
  });
});

async function listProcesses(): Promise<string[]> {
  const { stdout } = await execFileAsync("ps", ["-eo", "args"], { encoding: "utf8" });
  return stdout.split("\n");
}
