// The API transport's pod watch: every run's pod wait served by one list-watch of the namespace's pods of ours, filtered per run.
import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import { describe, it } from "node:test";
import type { IPod } from "kubernetes-models/v1/Pod";
import { ApiCluster, readEqualitySelector } from "../../../src/cluster/api/api-cluster.js";
import type { WatchEvent } from "../../../src/cluster/cluster.js";
import { waitForPod } from "../../../src/executor/kubernetes/wait-for-pod.js";
import { buildTestContext } from "../../executor/kubernetes/test-context.js";
import { startScriptedApiServer } from "../../support/scripted-api-server.js";
import { until } from "../../support/until.js";

const MANAGED = "app.kubernetes.io/managed-by=knotless-runner-k8s";

function pod(runId: string, phase: "Pending" | "Running", rv: string): IPod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `knotless-run-${runId}-abcde`,
      namespace: "ci",
      resourceVersion: rv,
      creationTimestamp: "2024-05-01T10:00:00Z",
      labels: { "app.kubernetes.io/managed-by": "knotless-runner-k8s", "knotless.dev/run-id": runId },
    },
    spec:
      phase === "Running"
        ? { nodeName: "node-a", containers: [{ name: "run", image: "busybox:1.36" }] }
        : { containers: [{ name: "run", image: "busybox:1.36" }] },
    status:
      phase === "Running"
        ? {
            phase,
            containerStatuses: [
              {
                name: "run",
                image: "busybox:1.36",
                imageID: "",
                ready: true,
                restartCount: 0,
                state: { running: { startedAt: "2024-05-01T10:00:05Z" } },
              },
            ],
          }
        : { phase },
  };
}

const requests: URL[] = [];
const openWatches = new Set<ServerResponse>();
let listed: IPod[] = [];
const { client } = await startScriptedApiServer((req, res) => {
  const url = new URL(req.url!, "http://x");
  requests.push(url);
  if (url.pathname !== "/api/v1/namespaces/ci/pods") return void res.writeHead(404).end("{}");
  if (url.searchParams.get("watch") === "true") {
    res.writeHead(200, { "content-type": "application/json" });
    res.flushHeaders();
    openWatches.add(res);
    res.on("close", () => openWatches.delete(res));
    return;
  }
  res.end(JSON.stringify({ kind: "PodList", metadata: { resourceVersion: "10" }, items: listed }));
});

function send(type: WatchEvent<IPod>["type"], object: IPod): void {
  for (const res of openWatches) res.write(JSON.stringify({ type, object }) + "\n");
}

describe("the API transport's pod watch", () => {
  it("serves twenty runs' pod waits from one list and one watch, each run seeing only its own pod", async () => {
    requests.length = 0;
    const cluster = new ApiCluster(client);
    const runs = Array.from({ length: 20 }, (_, i) => String(100 + i));
    listed = runs.map((runId, i) => pod(runId, "Pending", String(i + 1)));
    const waits = runs.map((runId) => {
      const { ctx } = buildTestContext({
        timings: { podEventsAfterMs: 60_000 },
        settings: { runId, runIdLabel: runId, jobName: `knotless-run-${runId}` },
      });
      return waitForPod({ ...ctx, cluster }, Date.now() + 60_000);
    });
    await until(() => openWatches.size === 1, "the shared watch open");
    await new Promise((r) => setTimeout(r, 100)); // the waits' own schedules (5-10 ms) pass several times: no request of theirs
    for (const [i, runId] of runs.entries()) send("MODIFIED", pod(runId, "Running", String(100 + i)));
    const pods = await Promise.all(waits);
    assert.deepEqual(
      pods.map((p) => p.name),
      runs.map((runId) => `knotless-run-${runId}-abcde`),
    );
    assert.deepEqual(
      requests.map((url) => [url.searchParams.get("labelSelector"), url.searchParams.get("watch")]),
      [
        [MANAGED, null],
        [MANAGED, "true"],
      ],
      "one list and one watch, by the managed-by label alone",
    );
    await until(() => cluster.watches.size === 0, "the watch stopped after the last wait");
  });

  it("gives a watcher only the pods its selector matches, and a DELETED one for a pod that leaves it", async () => {
    await until(() => openWatches.size === 0, "the last test's watch closed on the server");
    requests.length = 0;
    listed = [pod("7", "Pending", "1"), pod("8", "Pending", "2")];
    const cluster = new ApiCluster(client);
    const seen: string[] = [];
    const controller = new AbortController();
    const watching = cluster.watchPods("ci", `${MANAGED},knotless.dev/run-id=7`, {
      signal: controller.signal,
      onEvent: (e) => seen.push(`${e.type} ${e.object.metadata?.name}`),
      onSynced: () => seen.push("synced"),
    });
    await until(() => openWatches.size === 1, "the watch open");
    send("MODIFIED", pod("8", "Running", "3"));
    const moved = pod("7", "Running", "4");
    send("MODIFIED", {
      ...moved,
      metadata: { ...moved.metadata, labels: { "app.kubernetes.io/managed-by": "knotless-runner-k8s" } },
    });
    await until(() => seen.length === 3, "the pod leaving the selector");
    assert.deepEqual(seen, ["ADDED knotless-run-7-abcde", "synced", "DELETED knotless-run-7-abcde"]);
    controller.abort();
    await watching;
  });

  it("shares only selectors of equalities that include the managed-by label", () => {
    assert.deepEqual(readEqualitySelector(`${MANAGED},knotless.dev/run-id=42`), [
      ["app.kubernetes.io/managed-by", "knotless-runner-k8s"],
      ["knotless.dev/run-id", "42"],
    ]);
    assert.equal(readEqualitySelector("a!=b"), undefined);
    assert.equal(readEqualitySelector("a in (b)"), undefined);
  });
});
