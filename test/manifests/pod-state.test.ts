import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { IPod } from "kubernetes-models/v1/Pod";
import { classifyPod, describePodEnd, isImagePullFailing, pickRunPod } from "../../src/manifests/pod-state.js";

function pod(status: NonNullable<IPod["status"]>, extra: Partial<IPod> = {}): IPod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p", creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: { containers: [{ name: "run" }], nodeName: "n1" },
    status,
    ...extra,
  };
}

function idleStopped(annotations: Record<string, string>, status: Partial<NonNullable<IPod["status"]>> = {}): IPod {
  const terminated = { exitCode: 75, reason: "Error" };
  return pod(
    {
      phase: "Failed",
      ...status,
      containerStatuses: [
        { name: "run", image: "i", imageID: "", ready: false, restartCount: 0, state: { terminated } },
      ],
    },
    { metadata: { name: "p", annotations } },
  );
}

const waiting = (reason: string) =>
  pod({
    phase: "Pending",
    containerStatuses: [
      {
        name: "run",
        image: "i",
        imageID: "",
        ready: false,
        restartCount: 0,
        state: { waiting: { reason, message: `${reason} happened` } },
      },
    ],
  });

describe("classifyPod", () => {
  it("sees no pod as absent", () => assert.deepEqual(classifyPod(undefined, 0, 1000), { kind: "absent" }));

  it("sees a running container as running on its node", () => {
    const p = pod({
      phase: "Running",
      containerStatuses: [
        { name: "run", image: "i", imageID: "", ready: true, restartCount: 0, state: { running: { startedAt: "x" } } },
      ],
    });
    assert.deepEqual(classifyPod(p, 0, 1000), { kind: "running", name: "p", node: "n1" });
  });

  it("reads the run container's status when a Docker daemon's is listed first, as the kubelet orders them by name", () => {
    const docker = {
      name: "docker",
      image: "d",
      imageID: "",
      ready: false,
      restartCount: 0,
      state: { waiting: { reason: "ContainerCreating" } },
    };
    const run = {
      name: "run",
      image: "i",
      imageID: "",
      ready: true,
      restartCount: 0,
      state: { running: { startedAt: "x" } },
    };
    assert.deepEqual(classifyPod(pod({ phase: "Running", containerStatuses: [docker, run] }), 0, 1000), {
      kind: "running",
      name: "p",
      node: "n1",
    });
  });

  it("reports an unschedulable pod as pending with the scheduler's reason", () => {
    const p = pod({
      phase: "Pending",
      conditions: [
        { type: "PodScheduled", status: "False", reason: "Unschedulable", message: "0/0 nodes are available" },
      ],
    });
    assert.deepEqual(classifyPod(p, 0, 1000), {
      kind: "pending",
      name: "p",
      phase: "Pending",
      reason: "Unschedulable",
      message: "0/0 nodes are available",
    });
  });

  it("calls a pod stuck at once when the scheduler cannot bind its claim: missing or being deleted", () => {
    for (const [words, why] of [
      ["not found", "does not exist in the run's namespace"],
      ["is being deleted", "is being deleted"],
    ] as const) {
      const message = `0/1 nodes are available: persistentvolumeclaim "ci-cache" ${words}. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.`;
      const p = pod({
        phase: "Pending",
        conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable", message }],
      });
      assert.deepEqual(classifyPod(p, 0, 1000), {
        kind: "stuck",
        name: "p",
        reason: "ClaimUnusable",
        message: `its PersistentVolumeClaim ci-cache ${why} (create it, or run without --cache-pvc): ${message}`,
      });
    }
  });

  it("gives an image pull failure its grace before calling it stuck", () => {
    assert.equal(classifyPod(waiting("ErrImagePull"), 500, 1000).kind, "pending");
    assert.equal(classifyPod(waiting("ImagePullBackOff"), 1000, 1000).kind, "stuck");
  });

  it("names a service container whose image cannot be pulled while the run container only waits for it, after the grace", () => {
    const blocked = pod({
      phase: "Pending",
      initContainerStatuses: [
        {
          name: "postgres",
          image: "pg",
          imageID: "",
          ready: false,
          restartCount: 0,
          state: { waiting: { reason: "ImagePullBackOff", message: 'Back-off pulling image "pg"' } },
        },
      ],
      containerStatuses: [
        {
          name: "run",
          image: "i",
          imageID: "",
          ready: false,
          restartCount: 0,
          state: { waiting: { reason: "PodInitializing" } },
        },
      ],
    });
    assert.equal(isImagePullFailing(blocked), true);
    assert.equal(classifyPod(blocked, 500, 1000).kind, "pending");
    assert.deepEqual(classifyPod(blocked, 1000, 1000), {
      kind: "stuck",
      name: "p",
      reason: "ImagePullBackOff",
      message: 'container postgres: Back-off pulling image "pg"',
    });
  });

  it("calls an invalid image name or a config error stuck at once", () => {
    assert.equal(classifyPod(waiting("InvalidImageName"), 0, 1000).kind, "stuck");
    assert.equal(classifyPod(waiting("CreateContainerConfigError"), 0, 1000).kind, "stuck");
  });

  it("sees an evicted pod as gone with the eviction reason", () => {
    const state = classifyPod(pod({ phase: "Failed", reason: "Evicted", message: "low on memory" }), 0, 1000);
    assert.deepEqual(state, { kind: "gone", name: "p", reason: "Evicted", message: "low on memory" });
  });

  it("sees a pod its idle guard stopped (exit 75) as gone in the runner's words, with the timeout from its annotation", () => {
    const stopped = idleStopped({ "knotless.dev/pod-idle-timeout-seconds": "600" });
    assert.deepEqual(classifyPod(stopped, 0, 1000), {
      kind: "gone",
      name: "p",
      reason: "RunnerIdle",
      message: "the pod stopped itself after 10m without runner activity (its runner is gone, or could not reach it)",
    });
    assert.match(
      describePodEnd(idleStopped({ "knotless.dev/pod-idle-timeout-seconds": "20" })).message!,
      /^the pod stopped itself after 20\.0s without runner activity/,
    );
    assert.match(
      describePodEnd(idleStopped({})).message!,
      /^the pod stopped itself without runner activity/,
      "no annotation: no figure guessed",
    );
  });

  it("keeps the cluster's reason for a pod whose run container exited 75 when the pod itself was evicted", () => {
    const evicted = idleStopped({}, { reason: "Evicted", message: "low on ephemeral storage" });
    assert.deepEqual(describePodEnd(evicted), { reason: "Evicted", message: "low on ephemeral storage" });
  });

  it("names a failed run container's exit code when the cluster gives no reason", () => {
    const failed = pod({
      phase: "Failed",
      containerStatuses: [
        {
          name: "run",
          image: "i",
          imageID: "",
          ready: false,
          restartCount: 0,
          state: { terminated: { exitCode: 137, reason: "Error" } },
        },
      ],
    });
    assert.deepEqual(describePodEnd(failed), { reason: "Error", message: "the container exited with code 137" });
  });

  it("sees a pod being deleted as gone", () => {
    const p = pod({ phase: "Running" }, { metadata: { name: "p", deletionTimestamp: "2026-01-01T00:00:01Z" } });
    assert.equal(classifyPod(p, 0, 1000).kind, "gone");
  });
});

describe("pickRunPod", () => {
  it("picks the newest pod", () => {
    const older = { ...pod({}), metadata: { name: "old", creationTimestamp: "2026-01-01T00:00:00Z" } };
    const newer = { ...pod({}), metadata: { name: "new", creationTimestamp: "2026-01-01T00:00:09Z" } };
    assert.equal(pickRunPod([older, newer])?.metadata?.name, "new");
  });
});
