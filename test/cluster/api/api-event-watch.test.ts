// The API transport's events watch: every run's Pending reasons served by one list-watch of the namespace's pod events, filtered per pod.
import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import { beforeEach, describe, it } from "node:test";
import type { IEvent } from "kubernetes-models/v1/Event";
import type { IPod } from "kubernetes-models/v1/Pod";
import { ApiCluster } from "../../../src/cluster/api/api-cluster.js";
import { InfraError } from "../../../src/core/errors.js";
import { waitForPod } from "../../../src/executor/kubernetes/wait-for-pod.js";
import { buildTestContext } from "../../executor/kubernetes/test-context.js";
import { startScriptedApiServer } from "../../support/scripted-api-server.js";
import { until } from "../../support/until.js";

const PODS = "/api/v1/namespaces/ci/pods";
const EVENTS = "/api/v1/namespaces/ci/events";

function pendingPod(runId: string): IPod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `knotless-run-${runId}-abcde`,
      namespace: "ci",
      resourceVersion: "1",
      creationTimestamp: "2024-05-01T10:00:00Z",
      labels: { "app.kubernetes.io/managed-by": "knotless-runner-k8s", "knotless.dev/run-id": runId },
    },
    spec: { nodeSelector: { pool: "gpu" }, containers: [{ name: "run", image: "busybox:1.36" }] },
    status: {
      phase: "Pending",
      conditions: [
        {
          type: "PodScheduled",
          status: "False",
          reason: "Unschedulable",
          message: "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
        },
      ],
    },
  };
}

function event(pod: string, reason: string, message: string, rv: string, count = 1): IEvent {
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: `${pod}.${reason.toLowerCase()}`, namespace: "ci", resourceVersion: rv },
    involvedObject: { kind: "Pod", name: pod, namespace: "ci" },
    reason,
    message,
    count,
    lastTimestamp: `2024-05-01T10:00:0${rv.length > 1 ? 9 : rv}Z`,
  };
}

const requests: URL[] = [];
const openWatches = new Map<ServerResponse, string>();
let pods: IPod[] = [];
let events: IEvent[] = [];
/** Each events watch request in turn: "hold" keeps it open, "gone" answers an in-stream 410 and ends it. */
let eventWatches: Array<"hold" | "gone"> = [];
const { client } = await startScriptedApiServer((req, res) => {
  const url = new URL(req.url!, "http://x");
  requests.push(url);
  if (url.pathname !== PODS && url.pathname !== EVENTS) return void res.writeHead(404).end("{}");
  if (url.searchParams.get("watch") === "true") {
    res.writeHead(200, { "content-type": "application/json" });
    res.flushHeaders();
    if (url.pathname === EVENTS && (eventWatches.shift() ?? "hold") === "gone") {
      res.end(
        JSON.stringify({
          type: "ERROR",
          object: { kind: "Status", code: 410, reason: "Expired", message: "too old resource version" },
        }) + "\n",
      );
      return;
    }
    openWatches.set(res, url.pathname);
    res.on("close", () => openWatches.delete(res));
    return;
  }
  if (url.pathname === PODS)
    return void res.end(JSON.stringify({ kind: "PodList", metadata: { resourceVersion: "10" }, items: pods }));
  res.end(JSON.stringify({ kind: "EventList", metadata: { resourceVersion: "20" }, items: events }));
});
beforeEach(async () => {
  await until(() => openWatches.size === 0, "the last test's watches closed on the server");
  requests.length = 0;
  eventWatches = [];
});

function sendEvent(type: "ADDED" | "MODIFIED" | "DELETED", object: IEvent): void {
  for (const [res, path] of openWatches) if (path === EVENTS) res.write(JSON.stringify({ type, object }) + "\n");
}

const eventRequests = (): Array<[string | null, string | null]> =>
  requests
    .filter((url) => url.pathname === EVENTS)
    .map((url) => [url.searchParams.get("fieldSelector"), url.searchParams.get("watch")]);

describe("the API transport's events watch", () => {
  it("serves twenty pod waits' Pending reasons from one list and one watch of the pod events, each wait seeing only its own pod's", async () => {
    const cluster = new ApiCluster(client);
    const runs = Array.from({ length: 20 }, (_, i) => String(200 + i));
    pods = runs.map(pendingPod);
    events = [event(pods[0]!.metadata!.name!, "FailedScheduling", "0/1 nodes are available", "1")];
    const waits = runs.map((runId) => {
      const { ctx } = buildTestContext({
        timings: { podEventsAfterMs: 0, podEventsEveryMs: 10, unplaceableGraceMs: 60_000 },
        settings: { runId, runIdLabel: runId, jobName: `knotless-run-${runId}` },
      });
      return waitForPod({ ...ctx, cluster }, Date.now() + 60_000).then(
        () => assert.fail(`run ${runId}'s wait ended without a verdict`),
        (error: unknown) => error,
      );
    });
    await until(
      () => [...openWatches.values()].filter((path) => path === EVENTS).length === 1,
      "the shared events watch open",
    );
    await new Promise((r) => setTimeout(r, 100)); // the waits' own schedules (5-10 ms) pass several times: no request of theirs
    // One pod's autoscaler verdict reaches that pod's wait alone.
    const first = pods[0]!.metadata!.name!;
    sendEvent(
      "ADDED",
      event(
        first,
        "NotTriggerScaleUp",
        "pod didn't trigger scale-up: 1 node(s) didn't match Pod's node affinity/selector",
        "2",
      ),
    );
    const verdict = await waits[0]!;
    assert.ok(verdict instanceof InfraError && verdict.reason === "pod-config", String(verdict));
    assert.match((verdict as InfraError).message, new RegExp(`pod ${first} cannot be placed: .*NotTriggerScaleUp`));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(openWatches.size, 2, "the other nineteen still wait on the shared watches");
    for (const pod of pods.slice(1))
      sendEvent(
        "ADDED",
        event(
          pod.metadata!.name!,
          "NotTriggerScaleUp",
          "pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector",
          "3",
        ),
      );
    for (const wait of waits.slice(1)) {
      const error = await wait;
      assert.ok(error instanceof InfraError && error.reason === "pod-config", String(error));
    }
    assert.deepEqual(
      eventRequests(),
      [
        ["involvedObject.kind=Pod", null],
        ["involvedObject.kind=Pod", "true"],
      ],
      "one list and one watch of the pod events, by kind alone",
    );
    await until(() => cluster.watches.size === 0, "the watches stopped after the last wait");
  });

  it("lists again when the watch answers 410 Gone, delivering what changed meanwhile, and watches on", async () => {
    const cluster = new ApiCluster(client);
    const pod = "knotless-run-7-abcde";
    events = [
      event(pod, "FailedScheduling", "0/1 nodes are available", "1"),
      event("another-pod", "Scheduled", "assigned", "1"),
    ];
    eventWatches = ["gone"];
    const seen: string[] = [];
    const controller = new AbortController();
    const watching = cluster.watchEvents(
      "ci",
      { kind: "Pod", name: pod },
      {
        signal: controller.signal,
        onEvent: (e) => seen.push(`${e.type} ${e.object.reason} ${e.object.count}`),
        onSynced: () => {
          seen.push("synced");
          // What the relist finds: the repeat counted twice now.
          events = [event(pod, "FailedScheduling", "0/1 nodes are available", "5", 2)];
        },
      },
    );
    await until(() => [...openWatches.values()].includes(EVENTS), "the second watch open");
    sendEvent("ADDED", event(pod, "TriggeredScaleUp", "pod triggered scale-up", "6"));
    await until(() => seen.length === 5, "the event after the relist");
    assert.deepEqual(seen, [
      "ADDED FailedScheduling 1",
      "synced",
      "MODIFIED FailedScheduling 2",
      "synced",
      "ADDED TriggeredScaleUp 1",
    ]);
    assert.deepEqual(eventRequests(), [
      ["involvedObject.kind=Pod", null],
      ["involvedObject.kind=Pod", "true"],
      ["involvedObject.kind=Pod", null],
      ["involvedObject.kind=Pod", "true"],
    ]);
    const resumed = requests
      .filter((url) => url.pathname === EVENTS && url.searchParams.get("watch") === "true")
      .map((url) => url.searchParams.get("resourceVersion"));
    assert.deepEqual(resumed, ["20", "20"], "each watch from its list's resourceVersion, with bookmarks asked for");
    assert.ok(
      requests
        .filter((url) => url.searchParams.get("watch") === "true")
        .every((url) => url.searchParams.get("allowWatchBookmarks") === "true"),
    );
    controller.abort();
    await watching;
  });
});
