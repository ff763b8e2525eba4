// The scale-from-zero mode through the real kubectl and podman: no node until demand, a scale-up that joins, capacity, and the hold.

import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import { findContainerSkipReason, NAMESPACE, startTestCluster, waitFor, type TestCluster } from "./harness.js";
import { listKubectlBinaries } from "./kubectl-runner.js";

const skip = await findContainerSkipReason();
const kubectl = listKubectlBinaries().at(-1)!;
const JOIN = 2;
const HOLD = 2;

/** A Job of one pod that requests `cpu` and exits on SIGTERM at once; `command` overrides what it runs. */
function buildJob(name: string, cpu: string, command = "trap 'exit 0' TERM; sleep 300 & wait"): string {
  return JSON.stringify({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name },
    spec: {
      backoffLimit: 0,
      template: {
        spec: {
          restartPolicy: "Never",
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: "run",
              image: "docker.io/library/busybox:1.36",
              command: ["sh", "-c", command],
              resources: { requests: { cpu, memory: "64Mi" } },
            },
          ],
        },
      },
    },
  });
}

describe("the local cluster scaling from zero", { skip, concurrency: 1, timeout: 120_000 }, () => {
  let tc: TestCluster | undefined;
  const start = async (): Promise<TestCluster> =>
    (tc = await startTestCluster({ scaleFromZero: { joinSeconds: JOIN, holdSeconds: HOLD } }));
  const run = (args: string[], stdin?: string) => tc!.kubectl(kubectl.path, args, stdin === undefined ? {} : { stdin });
  const nodeNames = async (): Promise<string[]> => {
    const r = await run(["get", "nodes", "-o", "name"]);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.split("\n").filter(Boolean);
  };
  const podOf = (job: string) =>
    tc!.cluster.objects("pods", NAMESPACE).find((p) => p.metadata.labels?.["job-name"] === job);
  const eventsOf = async (object: string): Promise<string> =>
    (await run(["get", "events", "--field-selector", `involvedObject.name=${object}`])).stdout;

  afterEach(async () => {
    await tc?.cluster.stop();
    if (tc) assert.deepEqual(await tc.cluster.podmanContainers(), [], "podman containers left");
    tc = undefined;
  });

  test("has no node until a pod needs one, whose pod waits with FailedScheduling and TriggeredScaleUp until the node joins", async () => {
    await start();
    assert.deepEqual(await nodeNames(), [], "a node before any demand");
    const created = Date.now();
    assert.equal((await run(["create", "-f", "-"], buildJob("first", "500m"))).code, 0);
    const pod = await waitFor("the pod", () => podOf("first")?.metadata.name);
    const events = await waitFor("the scale-up events", async () => {
      const text = await eventsOf(pod);
      return /FailedScheduling .*0\/0 nodes are available/.test(text) && /TriggeredScaleUp .*local-pool 0->1/.test(text)
        ? text
        : undefined;
    });
    assert.match(events, /Warning +FailedScheduling/);
    const described = await run(["get", "pod", pod, "-o", "json"]);
    assert.equal(
      JSON.parse(described.stdout).status.conditions.find((c: { type: string }) => c.type === "PodScheduled").reason,
      "Unschedulable",
    );
    await waitFor("the pod Running", () => (podOf("first")?.status?.phase === "Running" ? true : undefined), 60_000);
    assert.ok(Date.now() - created >= JOIN * 1000, "the pod ran before the node could have joined");
    assert.deepEqual(await nodeNames(), ["node/local-node-1"]);
    assert.equal(podOf("first")?.spec?.nodeName, "local-node-1");
    assert.match((await run(["get", "nodes"])).stdout, /local-node-1 +Ready/);
  });

  test("sends a pod made while the node joins to that node, and rents a second node for a pod that does not fit", async () => {
    await start();
    assert.equal((await run(["create", "-f", "-"], buildJob("big", "1500m"))).code, 0);
    await waitFor("the first scale-up", () => (tc!.cluster.nodeHistory().length === 1 ? true : undefined));
    assert.equal((await run(["create", "-f", "-"], buildJob("small", "250m"))).code, 0);
    assert.equal((await run(["create", "-f", "-"], buildJob("other", "1"))).code, 0);
    await waitFor(
      "all three bound",
      () => (["big", "small", "other"].every((job) => podOf(job)?.spec?.nodeName) ? true : undefined),
      30_000,
    );
    assert.equal(podOf("big")?.spec?.nodeName, "local-node-1");
    assert.equal(podOf("small")?.spec?.nodeName, "local-node-1", "the small pod waited for the joining node");
    assert.equal(podOf("other")?.spec?.nodeName, "local-node-2", "the pod that did not fit got its own node");
    assert.doesNotMatch(await eventsOf(podOf("small")!.metadata.name), /TriggeredScaleUp/);
    assert.match(await eventsOf(podOf("other")!.metadata.name), /TriggeredScaleUp .*local-pool 1->2/);
    assert.deepEqual(await nodeNames(), ["node/local-node-1", "node/local-node-2"]);
  });

  test("keeps the nodes while a failed Job without completionTime is left, and removes them HOLD seconds after the last demand", async () => {
    await start();
    assert.equal((await run(["create", "-f", "-"], buildJob("fails", "500m", "exit 1"))).code, 0);
    await waitFor(
      "the Job failed",
      () =>
        tc!.cluster
          .objects("jobs.batch", NAMESPACE)[0]
          ?.status?.conditions?.some((c: { type: string }) => c.type === "Failed")
          ? true
          : undefined,
      60_000,
    );
    await new Promise((r) => setTimeout(r, (HOLD + 1) * 1000));
    assert.deepEqual(await nodeNames(), ["node/local-node-1"], "the failed Job is demand: the node stays");
    assert.equal((await run(["delete", "job", "fails", "--cascade=background"])).code, 0);
    const deleted = Date.now();
    await waitFor(
      "the node gone",
      async () => ((await nodeNames()).length === 0 ? true : undefined),
      (HOLD + 10) * 1000,
    );
    assert.ok(Date.now() - deleted >= HOLD * 1000 - 300, "the node went before the hold was up");
    const [span] = tc!.cluster.nodeHistory();
    assert.ok(span?.readyAt && span.removedAt && span.removedAt - span.readyAt >= (HOLD + 1) * 1000);
    await waitFor("the failed pod gone with its node", () =>
      tc!.cluster.objects("pods", NAMESPACE).length === 0 ? true : undefined,
    );
  });
});
