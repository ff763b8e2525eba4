// Warm capacity end to end: the CLI and the real kubectl against the local cluster scaling from zero, pods in podman.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { startLocalCluster, type KubeObject, type LocalCluster } from "../../local-cluster/index.js";
import type { RunResult } from "../../src/run/run-result.js";
import { makeWorkspace, readResult, REPO_ROOT, runCli } from "../support/run-cli.js";

const SDK = "/usr/lib/google-cloud-sdk/bin";
const KUBECTL = ["1.33", "1.30"].map((v) => join(SDK, `kubectl.${v}`)).find(existsSync) ?? "kubectl";
/** Seconds from a scale-up to the node's join, and from the last demand to the node's removal. */
const JOIN = 6;
const HOLD = 3;

function podmanWorks(): boolean {
  return spawnSync("podman", ["image", "exists", "docker.io/library/busybox:1.36"], { stdio: "ignore" }).status === 0;
}
const skip = podmanWorks()
  ? false
  : "podman with the local busybox image is not available (run scripts/setup-containers.sh)";

async function waitFor<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const isPlaceholder = (job: KubeObject): boolean => job.metadata.labels?.["knotless.dev/role"] === "warm";

describe("warm capacity on the local cluster scaling from zero", { skip, concurrency: 1, timeout: 600_000 }, () => {
  let cluster: LocalCluster;
  /** When each pod was first seen and first seen bound to a node, from the server's own store (every 50 ms). */
  const seen = new Map<string, { created: number; bound?: number }>();
  let watch: NodeJS.Timeout | undefined;
  before(async () => {
    cluster = await startLocalCluster({
      scaleFromZero: { joinSeconds: JOIN, holdSeconds: HOLD },
      imageBackOffSeconds: 1,
    });
    watch = setInterval(() => {
      for (const pod of cluster.objects("pods")) {
        const entry = seen.get(pod.metadata.name) ?? { created: Date.now() };
        if (pod.spec?.nodeName && entry.bound === undefined) entry.bound = Date.now();
        seen.set(pod.metadata.name, entry);
      }
    }, 50);
  });
  after(async () => {
    clearInterval(watch);
    await cluster?.stop();
  });
  /** How long the pod waited for a node: podman's start, slow on a loaded machine, is not in it. */
  const waitedForNode = (pod: string): number => {
    const entry = seen.get(pod);
    assert.ok(entry?.bound !== undefined, `pod ${pod} was never seen bound`);
    return entry.bound - entry.created;
  };

  const clusterArgs = (): string[] => ["--kubeconfig", cluster.kubeconfigPath, "--kubectl", KUBECTL];
  const placeholders = (): KubeObject[] => cluster.objects("jobs.batch").filter(isPlaceholder);
  const heldPlaceholderPods = (): KubeObject[] =>
    cluster
      .objects("pods")
      .filter(
        (p) =>
          p.metadata.labels?.["knotless.dev/role"] === "warm" &&
          p.status?.phase === "Running" &&
          !p.metadata.deletionTimestamp,
      );
  /** The scheduling events of a pod (kept after the pod is gone): Scheduled, FailedScheduling, TriggeredScaleUp. */
  const reasonsFor = (pod: string): string[] =>
    [
      ...new Set(
        cluster
          .objects("events")
          .filter((e) => e.involvedObject?.name === pod && /Scheduled|FailedScheduling|ScaleUp/.test(String(e.reason)))
          .map((e) => String(e.reason)),
      ),
    ].sort();
  const nodes = (): string[] => cluster.objects("nodes").map((n) => n.metadata.name);
  const warm = async (...args: string[]) => {
    const cli = await runCli(["warm", ...args, ...clusterArgs()]);
    assert.equal(cli.code, 0, cli.stderr);
    return cli;
  };
  /** A run through the CLI; `console` is what it printed about itself (stderr). */
  const run = async (
    extra: string[] = [],
    steps = "hi\techo hi from the run\n",
  ): Promise<{ result: RunResult; console: string; log: string }> => {
    const ws = makeWorkspace(steps);
    const cli = await runCli(
      [
        "run",
        "--checkout",
        ws.checkout,
        "--steps",
        ws.stepsFile,
        "--out",
        ws.out,
        ...clusterArgs(),
        "--pod-timeout",
        "2m",
        "--timeout",
        "3m",
        ...extra,
      ],
      { timeoutMs: 240_000 },
    );
    assert.equal(cli.code, 0, `${cli.stdout}\n${cli.stderr}`);
    return { result: readResult(ws.out), console: cli.stderr, log: readFileSync(join(ws.out, "run.log"), "utf8") };
  };
  const waitForHeld = (count: number) =>
    waitFor(
      `${count} placeholder pod(s) holding a node`,
      () => (heldPlaceholderPods().length === count ? true : undefined),
      (JOIN + 60) * 1000,
    );

  /** Nothing of the test is left: no Job, pod or node in the store (the hold is short), no container in podman. */
  async function assertNothingLeft(): Promise<void> {
    await waitFor(
      "every Job and pod gone",
      () => (cluster.objects("jobs.batch").length + cluster.objects("pods").length === 0 ? true : undefined),
      60_000,
    );
    await waitFor(
      "every node gone after the hold",
      () => (nodes().length === 0 ? true : undefined),
      (HOLD + 30) * 1000,
    );
    await waitFor(
      "podman empty",
      async () => ((await cluster.podmanContainers()).length === 0 ? true : undefined),
      30_000,
    );
  }

  // A test that failed midway must not leave its nodes and pods to the next one.
  let nodesBefore = 0;
  beforeEach(async () => {
    cluster.clearFaults();
    await assertNothingLeft();
    nodesBefore = cluster.nodeHistory().length;
  });
  /** The nodes rented since the test began. */
  const rentedNodes = (): number => cluster.nodeHistory().length - nodesBefore;

  it("runs cold first, waiting at least JOIN, and the next run within DUR of --keep-warm starts on the warm node and consumes the placeholder", async () => {
    cluster.clearFaults();
    assert.deepEqual(nodes(), []);
    const first = await run(["--keep-warm", "2m"]);
    assert.equal(first.result.capacity, "cold");
    assert.ok(first.result.podWaitMs! >= JOIN * 1000, `a cold pod waited only ${first.result.podWaitMs} ms`);
    assert.match(first.console, /on cold capacity: no warm placeholder/);
    assert.match(first.log, /left warm placeholder knotless-warm-0 for 2m00s/);
    assert.equal(placeholders().length, 1, "--keep-warm left one placeholder");
    await waitForHeld(1);

    const second = await run();
    assert.equal(second.result.capacity, "warm");
    assert.deepEqual(reasonsFor(first.result.job.pod!), ["FailedScheduling", "Scheduled", "TriggeredScaleUp"]);
    assert.deepEqual(reasonsFor(second.result.job.pod!), ["Scheduled"], "the warm pod waited for a node");
    assert.ok(
      waitedForNode(first.result.job.pod!) >= JOIN * 1000 - 100,
      "the cold pod got a node before one could join",
    );
    assert.ok(
      waitedForNode(second.result.job.pod!) < 1000,
      `the warm pod waited ${waitedForNode(second.result.job.pod!)} ms for its node`,
    );
    assert.equal(second.result.job.node, first.result.job.node, "the warm run ran on the node the first one had");
    assert.match(second.console, /on warm capacity: claimed placeholder default\/knotless-warm-0 \(it held a node/);
    assert.match(second.log, /warm: the pod waited/);
    assert.deepEqual(placeholders(), [], "the placeholder was consumed");
    assert.equal(rentedNodes(), 1, "one node was rented in all");
    await assertNothingLeft();
  });

  it("lets a placeholder expire by itself after DUR, and the node then goes away after HOLD", async () => {
    const duration = JOIN + 4;
    const made = await warm("--for", `${duration}s`);
    assert.match(made.stdout, /^warm: 1 of 1 warm placeholder\(s\): created knotless-warm-0/);
    const createdAt = Date.parse(placeholders()[0]!.metadata.creationTimestamp);
    // The node it rented, not its pod running: on a loaded machine podman may not start the pod within the 4 s of
    // the placeholder's life after the node joins, and an expiry does not depend on it.
    await waitFor(
      "a node rented for the placeholder",
      () => (nodes().length === 1 ? true : undefined),
      (JOIN + 60) * 1000,
    );
    await waitFor(
      "the placeholder gone by itself",
      () => (placeholders().length === 0 ? true : undefined),
      (duration + 30) * 1000,
    );
    const goneAt = Date.now();
    assert.ok(
      goneAt - createdAt >= duration * 1000 - 1000,
      `the placeholder went after ${goneAt - createdAt} ms, before its ${duration} s`,
    );
    await waitFor("the node gone", () => (nodes().length === 0 ? true : undefined), (HOLD + 30) * 1000);
    assert.ok(Date.now() - goneAt >= HOLD * 1000 - 500, "the node went before the hold was up");
    await assertNothingLeft();
  });

  it("serves two concurrent runs warm after warm --count 2, from the one node the placeholders held", async () => {
    await warm("--count", "2", "--max-warm", "2", "--for", "3m");
    const again = await warm("--count", "2", "--max-warm", "2", "--for", "3m");
    assert.match(again.stdout, /already there: knotless-warm-0 .*knotless-warm-1/, "a second warm is a no-op");
    assert.equal(placeholders().length, 2);
    await waitForHeld(2);
    const [a, b] = await Promise.all([run(), run()]);
    assert.deepEqual([a!.result.capacity, b!.result.capacity], ["warm", "warm"]);
    // Two pods starting at once in podman can take longer than a join on a loaded machine: what makes them warm is
    // that neither waited for a node (no FailedScheduling, no scale-up, bound within a second).
    for (const r of [a!, b!]) {
      assert.deepEqual(reasonsFor(r.result.job.pod!), ["Scheduled"], `pod ${r.result.job.pod} waited for a node`);
      assert.ok(
        waitedForNode(r.result.job.pod!) < 1000,
        `pod ${r.result.job.pod} waited ${waitedForNode(r.result.job.pod!)} ms for its node`,
      );
    }
    assert.deepEqual(placeholders(), []);
    assert.equal(rentedNodes(), 1);
    await assertNothingLeft();
  });

  it("gives one placeholder to exactly one of two runs racing for it; the other runs cold, and nothing is duplicated or left", async () => {
    await warm("--for", "3m");
    await waitForHeld(1);
    // Both runs list the placeholder before either delete reaches the server: a real race for one claim.
    const mark = cluster.faultFirings().length;
    cluster.setFaults({
      latency: { ms: 1500, match: "^DELETE /apis/batch/v1/namespaces/default/jobs/knotless-warm-" },
    });
    const [a, b] = await Promise.all([run(), run()]);
    const claims = cluster
      .faultFirings()
      .slice(mark)
      .filter((f) => f.fault === "latency" && f.subject.startsWith("DELETE"));
    cluster.clearFaults();
    assert.equal(claims.length, 2, "both runs tried to claim it");
    assert.deepEqual([a!.result.capacity, b!.result.capacity].sort(), ["cold", "warm"]);
    const loser = a!.result.capacity === "cold" ? a! : b!;
    assert.match(
      loser.console,
      /on cold capacity: the warm placeholders were taken first: knotless-warm-0 \(another run claimed it/,
    );
    assert.deepEqual(placeholders(), []);
    assert.equal(rentedNodes(), 1, "the loser's pod fitted beside the winner's: no second node");
    await assertNothingLeft();
  });

  it("deletes every placeholder at once on warm --release", async () => {
    await warm("--count", "2", "--max-warm", "2", "--for", "5m");
    assert.equal(placeholders().length, 2);
    const released = await warm("--release");
    assert.equal(released.stdout, "warm: released 2 warm placeholder(s): knotless-warm-0, knotless-warm-1\n");
    assert.deepEqual(placeholders(), []);
    const none = await warm("--release");
    assert.equal(none.stdout, "warm: no warm placeholder to release\n");
    await assertNothingLeft();
  });

  it("leaves nothing that outlives its backstops when the runner is killed between claiming a placeholder and creating its Job (kubectl)", async () => {
    await warm("--for", "3m");
    await waitForHeld(1);
    const mark = cluster.faultFirings().length;
    cluster.setFaults({
      latency: { ms: 2000, match: "^DELETE /apis/batch/v1/namespaces/default/jobs/knotless-warm-" },
    });
    const ws = makeWorkspace("hi\techo hi\n");
    // Through kubectl: its claim is a child process that outlives the runner (the API transport's case is the next test).
    const runner = spawn(
      process.execPath,
      [
        join(REPO_ROOT, "bin", "knotless-runner-k8s.js"),
        "run",
        "--checkout",
        ws.checkout,
        "--steps",
        ws.stepsFile,
        "--out",
        ws.out,
        ...clusterArgs(),
        "--transport",
        "kubectl",
      ],
      { stdio: "ignore" },
    );
    const exited = new Promise((resolve) => runner.once("exit", resolve));
    await waitFor(
      "the claim at the server",
      () =>
        cluster
          .faultFirings()
          .slice(mark)
          .some((f) => f.subject.startsWith("DELETE"))
          ? true
          : undefined,
      30_000,
    );
    runner.kill("SIGKILL");
    await exited;
    // The claim's kubectl outlives the runner and completes: the placeholder is gone, and no Job of the run was made.
    await waitFor("the claimed placeholder gone", () => (placeholders().length === 0 ? true : undefined), 10_000);
    cluster.clearFaults();
    await new Promise((r) => setTimeout(r, 1000));
    assert.deepEqual(
      cluster.objects("jobs.batch").map((j) => j.metadata.name),
      [],
      "a Job was created after the runner died",
    );
    await assertNothingLeft();
  });
  it("leaves the placeholder to the next run when the runner is killed mid-claim through the API transport: the claim dies with it", async () => {
    await warm("--for", "3m");
    await waitForHeld(1);
    const before = placeholders()[0]!;
    const mark = cluster.faultFirings().length;
    cluster.setFaults({
      latency: { ms: 2000, match: "^DELETE /apis/batch/v1/namespaces/default/jobs/knotless-warm-" },
    });
    const ws = makeWorkspace("hi\techo hi\n");
    const runner = spawn(
      process.execPath,
      [
        join(REPO_ROOT, "bin", "knotless-runner-k8s.js"),
        "run",
        "--checkout",
        ws.checkout,
        "--steps",
        ws.stepsFile,
        "--out",
        ws.out,
        ...clusterArgs(),
        "--transport",
        "api",
      ],
      { stdio: "ignore" },
    );
    const exited = new Promise((resolve) => runner.once("exit", resolve));
    await waitFor(
      "the claim at the server",
      () =>
        cluster
          .faultFirings()
          .slice(mark)
          .some((f) => f.subject.startsWith("DELETE"))
          ? true
          : undefined,
      30_000,
    );
    runner.kill("SIGKILL");
    await exited;
    // The claim was a request on the runner's own connection: the server drops it once its client is gone, so the
    // placeholder stays, unchanged, with its deadline (its backstop); no Job of the run was made.
    await new Promise((r) => setTimeout(r, 3000));
    cluster.clearFaults();
    assert.deepEqual(
      cluster.objects("jobs.batch").map((j) => j.metadata.name),
      [before.metadata.name],
      "only the placeholder is there",
    );
    assert.equal(placeholders()[0]!.metadata.uid, before.metadata.uid);
    assert.equal(placeholders()[0]!.metadata.deletionTimestamp, undefined);
    const gc = await runCli(["gc", "--dry-run", ...clusterArgs()]);
    assert.equal(gc.code, 0, gc.stderr);
    assert.match(gc.stdout, /knotless-warm-0.*warm placeholder, \d+m\d+s left/, "gc spares it until its deadline");
    // The next run claims it as if nothing had happened.
    const next = await run();
    assert.equal(next.result.capacity, "warm");
    assert.deepEqual(placeholders(), []);
    await assertNothingLeft();
  });
});
