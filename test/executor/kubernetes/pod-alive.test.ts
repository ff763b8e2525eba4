// Tests of telling a lost pod from a live one after an exec failed.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InfraError } from "../../../src/core/errors.js";
import { assertPodAlive, assertPodAliveAfterLag } from "../../../src/executor/kubernetes/pod-alive.js";
import {
  FORBIDDEN,
  NODE_NAME,
  POD_NAME,
  UNREACHABLE,
  deletingPod,
  endedPod,
  failure,
  pendingPod,
  podList,
  runningPod,
} from "./cluster-objects.js";
import { driveClock, mockClock } from "../../support/mock-clock.js";
import { buildTestContext } from "./test-context.js";
import { isInfraError } from "../../support/infra-error.js";

const POD = { name: POD_NAME, node: NODE_NAME };

const isPodLost = (message: RegExp): ((error: unknown) => boolean) => isInfraError("pod-lost", message);

describe("assertPodAlive", () => {
  it("resolves when the run's pod is still running, after reading it by the run's selector", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("get pods", podList(runningPod()));
    await assertPodAlive(ctx, POD);
    assert.equal(kubectl.calls.length, 1);
    assert.ok(
      kubectl.calls[0]?.args.includes("app.kubernetes.io/managed-by=knotless-runner-k8s,knotless.dev/run-id=42"),
    );
  });

  it("resolves while the pod is still Pending", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("get pods", podList(pendingPod({ waiting: { reason: "ContainerCreating" } })));
    await assertPodAlive(ctx, POD);
  });

  it("throws pod-lost when no pod matches the run any more", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("get pods", podList());
    await assert.rejects(assertPodAlive(ctx, POD), isPodLost(new RegExp(`pod ${POD_NAME} is gone`)));
  });

  it("throws pod-lost when the run's pod is another one than the pod the run used", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("get pods", podList(runningPod("knotless-run-42-zzzzz")));
    await assert.rejects(assertPodAlive(ctx, POD), isPodLost(/is gone/));
  });

  it("throws pod-lost with the reason and message when the pod was evicted", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("get pods", podList(endedPod("Failed", "Evicted", "The node was low on resource: ephemeral-storage.")));
    await assert.rejects(
      assertPodAlive(ctx, POD),
      isPodLost(/was lost: Evicted: The node was low on resource: ephemeral-storage\.$/),
    );
  });

  it("throws pod-lost in the runner's words when the pod's idle guard stopped it (exit 75)", async () => {
    const { ctx, kubectl } = buildTestContext();
    const ended = endedPod("Failed");
    const stopped = {
      ...ended,
      metadata: { ...ended.metadata, annotations: { "knotless.dev/pod-idle-timeout-seconds": "600" } },
      status: {
        phase: "Failed" as const,
        containerStatuses: [
          {
            name: "run",
            image: "busybox:1.36",
            imageID: "",
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: 75, reason: "Error" } },
          },
        ],
      },
    };
    kubectl.on("get pods", podList(stopped));
    await assert.rejects(
      assertPodAlive(ctx, POD),
      isPodLost(
        /was lost: RunnerIdle: the pod stopped itself after 10m without runner activity \(its runner is gone, or could not reach it\)$/,
      ),
    );
  });

  for (const phase of ["Succeeded", "Unknown"] as const) {
    it(`throws pod-lost naming the phase when the pod is ${phase}`, async () => {
      const { ctx, kubectl } = buildTestContext();
      kubectl.on("get pods", podList(endedPod(phase)));
      await assert.rejects(assertPodAlive(ctx, POD), isPodLost(new RegExp(`was lost: ${phase}$`)));
    });
  }

  it("throws pod-lost when the pod is being deleted", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("get pods", podList(deletingPod()));
    await assert.rejects(assertPodAlive(ctx, POD), isPodLost(/was lost/));
  });

  it("says the pod is being deleted rather than naming its Running phase", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("get pods", podList(deletingPod()));
    await assert.rejects(assertPodAlive(ctx, POD), isPodLost(/was lost: Deleted/));
  });

  it("resolves when the pod cannot be read, leaving the verdict to the caller", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("get pods", failure(UNREACHABLE));
    await assertPodAlive(ctx, POD);
    assert.equal(kubectl.calls.length, 1);
  });

  it("throws forbidden when reading pods is refused", async () => {
    const { ctx, kubectl } = buildTestContext();
    kubectl.on("get pods", failure(FORBIDDEN));
    await assert.rejects(
      assertPodAlive(ctx, POD),
      (error) => error instanceof InfraError && error.reason === "forbidden",
    );
  });
});

describe("assertPodAliveAfterLag", () => {
  it("throws pod-lost when the status says the pod was evicted only after the exec failed", async () => {
    const { ctx, kubectl } = buildTestContext({ timings: { podEndLagMs: 3000 } });
    const evicted = endedPod("Failed", "Evicted", "The node was low on resource: memory.");
    kubectl.on("get pods", [podList(runningPod()), podList(runningPod()), podList(evicted)]);
    await assert.rejects(assertPodAliveAfterLag(ctx, POD), isPodLost(/was lost: Evicted/));
    assert.equal(kubectl.callsTo("get pods").length, 3);
  });

  it("resolves once the pod still runs after podEndLagMs, looking about once a second", async (t) => {
    mockClock(t); // the looks at 0, 1 and 1.5 s, whatever the machine's load
    const { ctx, kubectl } = buildTestContext({ timings: { podEndLagMs: 1500 } });
    const readAt: number[] = [];
    kubectl.on("get pods", () => (readAt.push(Date.now()), podList(runningPod())));
    await driveClock(t, assertPodAliveAfterLag(ctx, POD));
    assert.deepEqual(readAt, [0, 1000, 1500]);
  });
});
