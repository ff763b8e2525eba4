// Tests of waiting for the run's pod: polling, Pending progress, fail-fast states, the image-pull grace, limits, cancel.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CancelledError } from "../../../src/core/errors.js";
import type { ExecutorContext } from "../../../src/executor/kubernetes/context.js";
import { waitForPod } from "../../../src/executor/kubernetes/wait-for-pod.js";
import {
  NODE_NAME,
  POD_NAME,
  FORBIDDEN,
  UNREACHABLE,
  endedPod,
  eventList,
  failure,
  pendingPod,
  podList,
  runningPod,
} from "./cluster-objects.js";
import { buildTestContext } from "./test-context.js";
import { isInfraError } from "../../support/infra-error.js";
import { driveClock, mockClock } from "../../support/mock-clock.js";

const FAR = (): number => Date.now() + 60_000;

const SCALE_UP_EVENTS = eventList(
  ["FailedScheduling", "0/3 nodes are available: 3 Insufficient cpu.", "2024-05-01T10:00:01Z"],
  ["TriggeredScaleUp", "pod triggered scale-up: [{pool-a 0->1 (max: 3)}]", "2024-05-01T10:00:02Z"],
);

const MISMATCH =
  "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.";

/** A Pending pod with `nodeSelector: {pool: gpu}` the scheduler cannot place, for `message`. */
function selectorPod(message: string): ReturnType<typeof pendingPod> {
  const pod = pendingPod({ unschedulable: { reason: "Unschedulable", message } });
  return { ...pod, spec: { ...pod.spec!, nodeSelector: { pool: "gpu" } } };
}

describe("waitForPod", { concurrency: true }, () => {
  it("returns the pod and its node once it runs, after polling through no pod and Pending", async () => {
    const { ctx, kubectl, eventsOf } = buildTestContext();
    kubectl.on("get pods", [
      podList(),
      podList(pendingPod({ waiting: { reason: "ContainerCreating" } })),
      podList(runningPod()),
    ]);
    const pod = await waitForPod(ctx, FAR());
    assert.deepEqual(pod, { name: POD_NAME, node: NODE_NAME });
    assert.equal(kubectl.callsTo("get pods").length, 3);
    assert.deepEqual(kubectl.calls[0]?.args, [
      "--kubeconfig",
      "/tmp/kubeconfig",
      "--context",
      "ctx",
      "--namespace",
      "ci",
      "get",
      "pods",
      "--selector",
      "app.kubernetes.io/managed-by=knotless-runner-k8s,knotless.dev/run-id=42",
      "--request-timeout",
      "30s",
      "-o",
      "json",
    ]);
    const [ready] = eventsOf("pod-ready");
    assert.equal(ready?.pod, POD_NAME);
    assert.equal(ready?.node, NODE_NAME);
  });

  it("follows the newest of the run's pods when the list holds an older one", async () => {
    const { ctx, kubectl } = buildTestContext();
    const evicted = endedPod("Failed", "Evicted", "The node was low on resource: memory.", "knotless-run-42-old");
    const older = { ...evicted, metadata: { ...evicted.metadata, creationTimestamp: "2024-05-01T09:00:00Z" } };
    kubectl.on("get pods", podList(older, runningPod()));
    assert.deepEqual(await waitForPod(ctx, FAR()), { name: POD_NAME, node: NODE_NAME });
  });

  it("keeps polling while the selector matches no pod yet, reporting that no pod exists", async () => {
    const { ctx, kubectl, eventsOf } = buildTestContext();
    kubectl.on("get pods", [podList(), podList(), podList(), podList(runningPod())]);
    await waitForPod(ctx, FAR());
    assert.equal(kubectl.callsTo("get pods").length, 4);
    const progress = eventsOf("pod-progress");
    assert.ok(progress.length >= 1);
    assert.ok(progress.every((e) => e.phase === "NoPodYet"));
  });

  it("reports Pending progress with the elapsed time, the phase, the reason and the pod's latest event", async () => {
    const { ctx, kubectl, eventsOf } = buildTestContext();
    const unschedulable = pendingPod({
      unschedulable: { reason: "Unschedulable", message: "0/3 nodes are available: 3 Insufficient cpu." },
    });
    // Pending until the runner has asked for the pod's events, then running.
    kubectl.on("get pods", () => podList(kubectl.callsTo("get events").length > 0 ? runningPod() : unschedulable));
    kubectl.on("get events", SCALE_UP_EVENTS);
    await waitForPod(ctx, FAR());
    const [events] = kubectl.callsTo("get events");
    assert.ok(events);
    assert.ok(events.args.includes(`involvedObject.kind=Pod,involvedObject.name=${POD_NAME}`), events.args.join(" "));
    const progress = eventsOf("pod-progress");
    assert.equal(progress[0]?.phase, "Pending");
    assert.equal(progress[0]?.reason, "Unschedulable");
    assert.equal(progress[0]?.message, "0/3 nodes are available: 3 Insufficient cpu.");
    assert.equal(progress[0]?.event, undefined);
    const withEvent = progress.find((e) => e.event !== undefined);
    assert.equal(withEvent?.event, "TriggeredScaleUp: pod triggered scale-up: [{pool-a 0->1 (max: 3)}]");
    assert.equal(withEvent?.phase, "Pending");
    assert.equal(withEvent?.reason, "Unschedulable");
    // Events are read only after the first second: the elapsed time says at least that much.
    assert.ok((withEvent?.elapsedMs ?? 0) >= 1000, `elapsedMs ${withEvent?.elapsedMs}`);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i]!.elapsedMs >= progress[i - 1]!.elapsedMs);
  });

  it("explains a missing pod with the Job's latest event", async () => {
    const { ctx, kubectl, eventsOf } = buildTestContext();
    kubectl.on("get pods", () => podList(...(kubectl.callsTo("get events").length > 0 ? [runningPod()] : [])));
    kubectl.on(
      "get events",
      eventList([
        "FailedCreate",
        'Error creating: pods "knotless-run-42-x7k2p" is forbidden: exceeded quota: compute',
        "2024-05-01T10:00:03Z",
      ]),
    );
    await waitForPod(ctx, FAR());
    const [events] = kubectl.callsTo("get events");
    assert.ok(
      events?.args.includes("involvedObject.kind=Job,involvedObject.name=knotless-run-42"),
      events?.args.join(" "),
    );
    const withEvent = eventsOf("pod-progress").find((e) => e.event !== undefined);
    assert.equal(withEvent?.phase, "NoPodYet");
    assert.equal(
      withEvent?.event,
      'FailedCreate: Error creating: pods "knotless-run-42-x7k2p" is forbidden: exceeded quota: compute',
    );
  });

  it("gives up at once with the pod's reason when the image name is invalid", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on(
      "get pods",
      podList(
        pendingPod({
          waiting: {
            reason: "InvalidImageName",
            message: 'Failed to apply default image tag "busybox:": couldn\'t parse image name',
          },
        }),
      ),
    );
    await assert.rejects(
      waitForPod(ctx, FAR()),
      isInfraError("image-pull", /InvalidImageName: Failed to apply default image tag "busybox:"/),
    );
    assert.equal(kubectl.callsTo("get pods").length, 1);
  });

  it("fails at once with pod-config, naming the selector, when the autoscaler will not add a node for the pod (NotTriggerScaleUp)", async () => {
    const { ctx, kubectl } = buildTestContext({
      timings: { podEventsAfterMs: 0, podEventsEveryMs: 10, unplaceableGraceMs: 60_000 },
    });
    kubectl.on("get pods", podList(selectorPod("0/0 nodes are available: no nodes available to schedule pods.")));
    kubectl.on(
      "get events",
      eventList(
        [
          "NotTriggerScaleUp",
          "pod didn't trigger scale-up: 1 node(s) didn't match Pod's node affinity/selector",
          "2024-05-01T10:00:02Z",
        ],
        ["FailedScheduling", "0/0 nodes are available", "2024-05-01T10:00:03Z"],
      ),
    );
    await assert.rejects(
      waitForPod(ctx, FAR()),
      isInfraError(
        "pod-config",
        /cannot be placed: the cluster autoscaler will not add a node for its node selector pool=gpu: NotTriggerScaleUp: pod didn't trigger scale-up: 1 node\(s\) didn't match/,
      ),
    );
  });

  it("fails at once with pod-config and the policy's words when admission refuses the Job's pod (FailedCreate), but waits out an exceeded quota", async () => {
    const refused =
      'pods "knotless-run-42-abcde" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true (pod or container "run" must set securityContext.runAsNonRoot=true)';
    const { ctx, kubectl } = buildTestContext({ timings: { podEventsAfterMs: 0, podEventsEveryMs: 10 } });
    kubectl.on("get pods", podList());
    kubectl.on("get events", eventList(["FailedCreate", `Error creating: ${refused}`, "2024-05-01T10:00:01Z"]));
    await assert.rejects(
      waitForPod(ctx, FAR()),
      isInfraError(
        "pod-config",
        /refused the run's pod at create \(admission\): pods "knotless-run-42-abcde" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true/,
      ),
    );

    const quota = buildTestContext({ timings: { podEventsAfterMs: 0, podEventsEveryMs: 10 } });
    quota.kubectl.on("get pods", () =>
      quota.kubectl.callsTo("get events").length >= 3 ? podList(runningPod()) : podList(),
    );
    quota.kubectl.on(
      "get events",
      eventList([
        "FailedCreate",
        'Error creating: pods "x" is forbidden: exceeded quota: compute, requested: cpu=1, used: cpu=4, limited: cpu=4',
        "2024-05-01T10:00:01Z",
      ]),
    );
    assert.deepEqual(await waitForPod(quota.ctx, FAR()), { name: POD_NAME, node: NODE_NAME });
  });

  it("gives up at once with pod-config when the container config is wrong", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on(
      "get pods",
      podList(
        pendingPod({ waiting: { reason: "CreateContainerConfigError", message: 'secret "registry-token" not found' } }),
      ),
    );
    await assert.rejects(
      waitForPod(ctx, FAR()),
      isInfraError("pod-config", /CreateContainerConfigError: secret "registry-token" not found/),
    );
    assert.equal(kubectl.callsTo("get pods").length, 1);
  });

  it("waits through ErrImagePull and ImagePullBackOff within the image-pull grace", async () => {
    const { ctx, kubectl, eventsOf } = buildTestContext({ timings: { imagePullGraceMs: 60_000 } });
    kubectl.on("get pods", [
      podList(
        pendingPod({ waiting: { reason: "ErrImagePull", message: "rpc error: code = Unknown desc = failed to pull" } }),
      ),
      podList(
        pendingPod({ waiting: { reason: "ImagePullBackOff", message: 'Back-off pulling image "busybox:1.36"' } }),
      ),
      podList(runningPod()),
    ]);
    assert.deepEqual(await waitForPod(ctx, FAR()), { name: POD_NAME, node: NODE_NAME });
    assert.deepEqual(
      eventsOf("pod-progress").map((e) => e.reason),
      ["ErrImagePull", "ImagePullBackOff"],
    );
  });

  it("fails with pod-lost when the pod ended before the run started", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("get pods", podList(endedPod("Failed", "Evicted", "The node was low on resource: memory.")));
    await assert.rejects(
      waitForPod(ctx, FAR()),
      isInfraError("pod-lost", /Evicted: The node was low on resource: memory\./),
    );
  });

  it("gives up with pod-timeout at the deadline, saying what it last saw", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on(
      "get pods",
      podList(pendingPod({ unschedulable: { reason: "Unschedulable", message: "0/3 nodes are available" } })),
    );
    await assert.rejects(
      waitForPod(ctx, Date.now() + 200),
      isInfraError("pod-timeout", /not running after \d+s: Pending Unschedulable/),
    );
    assert.ok(kubectl.callsTo("get pods").length >= 1);
  });

  it("gives up with pod-timeout naming the pod's latest event when it read one", async () => {
    const { ctx, kubectl } = buildTestContext({ timings: { podEventsAfterMs: 0, podEventsEveryMs: 0 } });
    kubectl.on(
      "get pods",
      podList(pendingPod({ unschedulable: { reason: "Unschedulable", message: "0/3 nodes are available" } })),
    );
    kubectl.on("get events", SCALE_UP_EVENTS);
    await assert.rejects(
      waitForPod(ctx, Date.now() + 200),
      isInfraError(
        "pod-timeout",
        /not running after \d+s: Pending Unschedulable \(TriggeredScaleUp: pod triggered scale-up: \[\{pool-a 0->1 \(max: 3\)\}\]\)$/,
      ),
    );
  });

  it("reads the pod once and gives up when the deadline has already passed", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("get pods", podList());
    await assert.rejects(
      waitForPod(ctx, Date.now() - 1),
      isInfraError("pod-timeout", /waiting for the Job to create its pod/),
    );
    assert.equal(kubectl.callsTo("get pods").length, 1);
  });

  it("fails with cluster-unreachable after five failed reads in a row", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("get pods", failure(UNREACHABLE));
    await assert.rejects(
      waitForPod(ctx, FAR()),
      isInfraError("cluster-unreachable", /5 tries.*Unable to connect to the server/),
    );
    assert.equal(kubectl.callsTo("get pods").length, 5);
  });

  it("forgets failed reads once a read succeeds, counting a pod list that is not JSON as a failed read", async () => {
    const { ctx, kubectl } = buildTestContext();
    const down = failure(UNREACHABLE);
    kubectl.on("get pods", [
      down,
      down,
      down,
      down,
      podList(),
      down,
      down,
      down,
      { stdout: "not json" },
      podList(runningPod()),
    ]);
    assert.deepEqual(await waitForPod(ctx, FAR()), { name: POD_NAME, node: NODE_NAME });
    assert.equal(kubectl.callsTo("get pods").length, 10);
  });

  it("fails at once with forbidden when reading pods is refused, saying what to do", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("get pods", failure(FORBIDDEN));
    await assert.rejects(
      waitForPod(ctx, FAR()),
      isInfraError(
        "forbidden",
        /^cannot read the run's pods: Error from server \(Forbidden\): .*lacks this permission; `knotless-runner-k8s credentials`/,
      ),
    );
    assert.equal(kubectl.callsTo("get pods").length, 1);
  });

  it("stops with CancelledError when the run is cancelled between polls", async () => {
    const { ctx, kubectl, cancel } = buildTestContext({ timings: { podPollMs: [60_000] } });
    // The first progress event comes after the read and before the wait for the next poll.
    const cancelling: ExecutorContext = {
      ...ctx,
      emit: (event) => (ctx.emit(event), event.kind === "pod-progress" && cancel()),
    };
    kubectl.on("get pods", podList());
    await assert.rejects(waitForPod(cancelling, FAR()), CancelledError);
    assert.equal(kubectl.callsTo("get pods").length, 1);
    assert.deepEqual(kubectl.calls[0]?.ended, { code: 0, signal: null }, "the read itself completed");
  });

  it("kills the pod read in flight and stops with CancelledError when the run is cancelled", async () => {
    const { ctx, kubectl, cancel } = buildTestContext();
    kubectl.on("get pods", () => {
      setImmediate(cancel);
      return { hang: true };
    });
    await assert.rejects(waitForPod(ctx, FAR()), CancelledError);
    const [read] = kubectl.calls;
    assert.deepEqual(read?.killSignals, ["SIGTERM"]);
    assert.deepEqual(read?.ended, { code: null, signal: "SIGTERM" });
    assert.equal(kubectl.calls.length, 1);
  });

  it("fails with forbidden when the events of a Pending pod cannot be read, rather than hiding why it waits", async () => {
    const { ctx, kubectl } = buildTestContext({ timings: { podEventsAfterMs: 0 } });
    kubectl.on(
      "get pods",
      podList(pendingPod({ unschedulable: { reason: "Unschedulable", message: "0/0 nodes are available" } })),
    );
    kubectl.on(
      "get events",
      failure(
        'Error from server (Forbidden): events is forbidden: User "u" cannot list resource "events" in API group "" in the namespace "ci"',
      ),
    );
    await assert.rejects(
      waitForPod(ctx, FAR()),
      isInfraError(
        "forbidden",
        /^cannot read the events of Pod knotless-run-42-x7k2p: .*cannot list resource "events"/,
      ),
    );
    assert.equal(kubectl.callsTo("get events").length, 1);
  });
});

// The tests whose verdict rests on the time between reads, on a mocked clock: one at a time, as the mock is global.
describe("waitForPod on a mocked clock", () => {
  it("fails with pod-config once no node has matched the pod's selector for the grace, with no autoscaler adding one", async (t) => {
    mockClock(t);
    const { ctx, kubectl } = buildTestContext({
      timings: { podEventsAfterMs: 0, podEventsEveryMs: 10, unplaceableGraceMs: 100 },
    });
    kubectl.on("get pods", podList(selectorPod(MISMATCH)));
    kubectl.on("get events", eventList(["FailedScheduling", MISMATCH, "2024-05-01T10:00:01Z"]));
    await assert.rejects(
      driveClock(t, waitForPod(ctx, FAR())),
      isInfraError(
        "pod-config",
        /no node matches its node selector pool=gpu, and no autoscaler added one in \d+s: Unschedulable: 0\/1 nodes are available: 1 node\(s\) didn't match/,
      ),
    );
    assert.ok(kubectl.callsTo("get pods").length >= 2, "the first read is within the grace");
  });

  it("keeps waiting for a pod no node matches yet while the autoscaler adds one, or its node group is at its max size", async (t) => {
    mockClock(t);
    for (const verdict of [
      ["TriggeredScaleUp", "pod triggered scale-up: [{gpu 0->1 (max: 3)}]"],
      ["NotTriggerScaleUp", "pod didn't trigger scale-up: 1 max node group size reached"],
    ] as const) {
      const { ctx, kubectl } = buildTestContext({
        timings: { podEventsAfterMs: 0, podEventsEveryMs: 10, unplaceableGraceMs: 20 },
      });
      let firstRead: number | undefined;
      kubectl.on("get pods", () => {
        firstRead ??= Date.now();
        return podList(Date.now() - firstRead >= 200 ? runningPod() : selectorPod(MISMATCH));
      });
      kubectl.on(
        "get events",
        eventList(
          ["FailedScheduling", MISMATCH, "2024-05-01T10:00:01Z"],
          [verdict[0], verdict[1], "2024-05-01T10:00:02Z"],
        ),
      );
      assert.deepEqual(await driveClock(t, waitForPod(ctx, FAR())), { name: POD_NAME, node: NODE_NAME }, verdict[0]);
    }
  });

  it("fails with image-pull once the pull has kept failing for the grace", async (t) => {
    mockClock(t);
    const { ctx, kubectl } = buildTestContext({ timings: { imagePullGraceMs: 100 } });
    kubectl.on(
      "get pods",
      podList(
        pendingPod({ waiting: { reason: "ImagePullBackOff", message: 'Back-off pulling image "busybox:nope"' } }),
      ),
    );
    await assert.rejects(
      driveClock(t, waitForPod(ctx, FAR())),
      isInfraError("image-pull", /ImagePullBackOff: Back-off pulling image "busybox:nope" \(pulls failing for \d/),
    );
    assert.ok(kubectl.callsTo("get pods").length >= 2, "the first failing read is within the grace");
  });

  it("starts the image-pull grace again when the pull stops failing in between", async (t) => {
    mockClock(t);
    // A grace above the gap between two reads (5-10 ms), since the loop may judge one read twice.
    const { ctx, kubectl } = buildTestContext({ timings: { imagePullGraceMs: 400 } });
    let firstRead: number | undefined;
    // Pull failures alternate with a plain Pending for four graces, then the pod runs.
    kubectl.on("get pods", (_call, n) => {
      firstRead ??= Date.now();
      if (Date.now() - firstRead >= 1600 && n % 2 === 1) return podList(runningPod());
      return podList(pendingPod({ waiting: { reason: n % 2 === 1 ? "ErrImagePull" : "ContainerCreating" } }));
    });
    assert.deepEqual(await driveClock(t, waitForPod(ctx, FAR())), { name: POD_NAME, node: NODE_NAME });
  });

  it("reads no events before podEventsAfterMs, and then at most every podEventsEveryMs", async (t) => {
    mockClock(t);
    const { ctx, kubectl } = buildTestContext({ timings: { podEventsAfterMs: 100, podEventsEveryMs: 150 } });
    kubectl.on("get pods", podList(pendingPod()));
    const readAt: number[] = [];
    kubectl.on("get events", () => {
      readAt.push(Date.now());
      return SCALE_UP_EVENTS;
    });
    await assert.rejects(driveClock(t, waitForPod(ctx, 800)), isInfraError("pod-timeout"));
    assert.ok(readAt.length >= 2, `the events were read once podEventsAfterMs had passed, and again: ${readAt}`);
    assert.ok(readAt[0]! >= 100, `first events read after ${readAt[0]} ms`);
    for (let i = 1; i < readAt.length; i++)
      assert.ok(readAt[i]! - readAt[i - 1]! >= 150, `events read at ${readAt.join(", ")} ms`);
    assert.ok(
      kubectl.callsTo("get pods").length > readAt.length,
      `${kubectl.callsTo("get pods").length} pod reads, ${readAt.length} event reads`,
    );
  });

  it("reports unchanged Pending progress again every podProgressRepeatMs, and only then", async (t) => {
    mockClock(t);
    const { ctx, kubectl, eventsOf } = buildTestContext({ timings: { podProgressRepeatMs: 100 } });
    kubectl.on("get pods", podList(pendingPod()));
    await assert.rejects(driveClock(t, waitForPod(ctx, 1000)), isInfraError("pod-timeout"));
    const progress = eventsOf("pod-progress");
    // Polls come every 5-10 ms: a report at the first, then at the first poll 100 ms or more after the last report.
    assert.ok(progress.length >= 9 && progress.length <= 11, `${progress.length} progress events in 1000 ms`);
    for (let i = 1; i < progress.length; i++) {
      const gap = progress[i]!.elapsedMs - progress[i - 1]!.elapsedMs;
      assert.ok(gap >= 100, `progress repeated after ${gap} ms`);
    }
  });
});
