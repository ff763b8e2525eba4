// Tests of each scripted fault of the fake kubectl, as documented in test/fixtures/fake-kubectl/faults.ts.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, test } from "node:test";
import { createFakeCluster, type FakeCluster } from "../fixtures/fake-kubectl/harness.js";
import { buildGlobalArgs, buildJobManifest, createJob, waitUntil } from "./job-fixture.js";

const getPods = async (cluster: FakeCluster, runId: string) =>
  JSON.parse(
    (
      await cluster.kubectl([
        ...buildGlobalArgs(cluster),
        "get",
        "pods",
        "--selector",
        `knotless.dev/run-id=${runId}`,
        "-o",
        "json",
      ])
    ).stdout,
  ).items;
const getEvents = async (cluster: FakeCluster, pod: string) =>
  JSON.parse(
    (
      await cluster.kubectl([
        ...buildGlobalArgs(cluster),
        "get",
        "events",
        "--field-selector",
        `involvedObject.kind=Pod,involvedObject.name=${pod}`,
        "-o",
        "json",
      ])
    ).stdout,
  ).items as { type: string; reason: string; message: string }[];
const exec = (cluster: FakeCluster, pod: string, script: string) =>
  cluster.kubectl([...buildGlobalArgs(cluster), "exec", pod, "-c", "run", "--", "sh", "-c", script]);

describe("faults", { concurrency: true }, () => {
  test("latencyMs delays every call", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    await cluster.setFaults({ latencyMs: 300 });
    await cluster.kubectl(["-n", "ci", "get", "pods", "-o", "json"]);
    const [call] = await cluster.calls();
    assert.ok((call?.durationMs ?? 0) >= 300);
  });

  test("createFailures fails the first creates with an etcd timeout and creates nothing", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    await cluster.setFaults({ createFailures: 1 });
    const failed = await cluster.kubectl([...buildGlobalArgs(cluster), "create", "-f", "-", "-o", "name"], {
      stdin: buildJobManifest("run-f", "r"),
    });
    assert.equal(failed.exitCode, 1);
    assert.equal(
      failed.stderr,
      "Error from server (InternalError): Internal error occurred: etcdserver: request timed out\n",
    );
    assert.deepEqual(await cluster.jobs(), []);
    await createJob(cluster, "run-f", "r");
  });

  test("pendingPolls shows the pod Pending with a FailedScheduling event, then Running after a Scheduled event", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    await cluster.setFaults({ pendingPolls: 1 });
    const pod = await createJob(cluster, "run-p", "r-p");
    const [pending] = await getPods(cluster, "r-p");
    assert.equal(pending.status.phase, "Pending");
    assert.equal(pending.status.containerStatuses[0].state.waiting.reason, "ContainerCreating");
    const before = await getEvents(cluster, pod);
    assert.deepEqual(
      before.map((e) => [e.type, e.reason]),
      [["Warning", "FailedScheduling"]],
    );
    assert.match(before[0]?.message ?? "", /^0\/0 nodes are available: .*scale-up/);
    const [running] = await getPods(cluster, "r-p");
    assert.equal(running.status.phase, "Running");
    assert.deepEqual(
      (await getEvents(cluster, pod)).map((e) => e.reason),
      ["FailedScheduling", "Scheduled"],
    );
  });

  test("imagePull keeps the pod Pending with the pull error and never starts it", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    await cluster.setFaults({ imagePull: "ImagePullBackOff" });
    const pod = await createJob(cluster, "run-i", "r-i");
    const [item] = await getPods(cluster, "r-i");
    assert.equal(item.status.phase, "Pending");
    assert.equal(item.status.containerStatuses[0].state.waiting.reason, "ImagePullBackOff");
    assert.match(
      item.status.containerStatuses[0].state.waiting.message,
      /Back-off pulling image "docker.io\/library\/busybox:1.36"/,
    );
    assert.ok(
      (await getEvents(cluster, pod)).some((e) => e.type === "Warning" && e.message === "Error: ImagePullBackOff"),
    );
    assert.equal((await cluster.pods())[0]?.sandboxAlive, false);
    const tried = await exec(cluster, pod, "true");
    assert.equal(tried.exitCode, 1);
  });

  test("execUpgradeFailures fails the first execs alternately with both upgrade errors, running nothing", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    const pod = await createJob(cluster, "run-u");
    await cluster.setFaults({ execUpgradeFailures: 2 });
    const first = await exec(cluster, pod, "echo ran >> /work/ran");
    const second = await exec(cluster, pod, "echo ran >> /work/ran");
    const third = await exec(cluster, pod, "echo ran >> /work/ran");
    assert.deepEqual(
      [first.exitCode, first.stderr],
      [1, 'error: unable to upgrade connection: container not found ("run")\n'],
    );
    assert.equal(second.exitCode, 1);
    assert.match(second.stderr, /error dialing backend: dial tcp 10\.0\.0\.1:10250: connect: connection refused/);
    assert.equal(third.exitCode, 0);
    const workDir = (await cluster.pods())[0]?.volumeDirs.work ?? "";
    assert.equal(await readFile(join(workDir, "ran"), "utf8"), "ran\n");
  });

  test("execCuts relay only the first bytes and end the exec while the process in the pod keeps running", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    const pod = await createJob(cluster, "run-c");
    await cluster.setFaults({
      execCuts: [
        { match: "step-1", afterBytes: 6, mode: "silent", times: 1 },
        { match: "step-2", afterBytes: 0, mode: "error", times: 1 },
      ],
    });
    const script = (name: string) =>
      `echo ${name}-start; sleep 1.5; echo more; echo ${name} > /work/${name}.done; exit 7`;
    const silent = await exec(cluster, pod, script("step-1"));
    assert.deepEqual([silent.exitCode, silent.stdout, silent.stderr], [0, "step-1", ""]);
    const error = await exec(cluster, pod, script("step-2"));
    assert.equal(error.exitCode, 1);
    assert.equal(error.stdout, "");
    assert.match(error.stderr, /^error: error reading from error stream: read tcp .*: connection reset by peer\n$/);
    assert.ok(
      (await cluster.processesInPod(pod)).some((p) => p.includes("step-2")),
      "the cut command still runs",
    );
    const workDir = (await cluster.pods())[0]?.volumeDirs.work ?? "";
    await waitUntil(async () => (await readFile(join(workDir, "step-2.done"), "utf8").catch(() => "")) === "step-2\n");
    await waitUntil(async () => (await cluster.execs()).every((e) => e.exitCode === 7));
    const again = await exec(cluster, pod, script("step-1"));
    assert.equal(again.exitCode, 7, "times bounds the cuts");
  });

  test("execSwallow exits 0 without running anything", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    const pod = await createJob(cluster, "run-s");
    await cluster.setFaults({ execSwallow: [{ match: "marker", times: 1 }] });
    const swallowed = await exec(cluster, pod, "echo marker > /work/marker; exit 4");
    assert.deepEqual([swallowed.exitCode, swallowed.stdout, swallowed.stderr], [0, "", ""]);
    const real = await exec(cluster, pod, "cat /work/marker 2>/dev/null || echo absent");
    assert.equal(real.stdout, "absent\n");
  });

  test("podLostAfterExecs evicts the pod during the n-th exec", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    const pod = await createJob(cluster, "run-l", "r-l");
    await cluster.setFaults({ podLostAfterExecs: 2, podLostDelayMs: 200 });
    assert.equal((await exec(cluster, pod, "true")).exitCode, 0);
    const lost = await exec(cluster, pod, "echo started; sleep 5");
    assert.equal(lost.exitCode, 1);
    assert.equal(lost.stdout, "started\n");
    assert.match(lost.stderr, /connection reset by peer/);
    const [item] = await getPods(cluster, "r-l");
    assert.deepEqual(
      [item.status.phase, item.status.reason, item.status.message],
      ["Failed", "Evicted", "The node was low on resource: memory."],
    );
    assert.deepEqual(await cluster.processesInPod(pod), []);
    const after = await exec(cluster, pod, "true");
    assert.equal(after.stderr, "error: cannot exec into a container in a completed pod; current phase is Failed\n");
  });

  test("setFaults rejects an unknown or mistyped fault", async (t) => {
    const cluster = await createFakeCluster();
    t.after(() => cluster.cleanup());
    await assert.rejects(cluster.setFaults({ latencyMS: 5 } as never), /latencyMS: unknown fault/);
    await assert.rejects(
      cluster.setFaults({ execCuts: [{ match: "x", afterBytes: -1, mode: "silent", times: 1 }] }),
      /execCuts/,
    );
  });
});
