// Tests the kubelet's pod events against a scripted podman (no containers): the order podman reports things in.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { createEventRecorder } from "../../local-cluster/events.js";
import { FaultInjector } from "../../local-cluster/faults.js";
import { Kubelet } from "../../local-cluster/kubelet.js";
import { formatPodmanContainerName } from "../../local-cluster/podman-pod-yaml.js";
import type { PodmanClient, PodmanContainer } from "../../local-cluster/podman.js";
import { ObjectStore } from "../../local-cluster/store.js";

const INSTANCE = "t1";

/** A podman whose container is running, and says so on its event stream, before `kube play` returns. */
class EagerPodman {
  readonly running = new Set<string>();
  /** How many times the kubelet read the containers' state (each a `podman ps` on a real podman). */
  listCalls = 0;
  onEvent: ((status: string, containerName: string) => void) | undefined;

  constructor(private readonly container: string) {}

  watchEvents(_label: string, onEvent: (status: string, containerName: string) => void): () => void {
    this.onEvent = onEvent;
    return () => (this.onEvent = undefined);
  }

  async imageExists(): Promise<boolean> {
    return true;
  }

  async playKube(): Promise<void> {
    this.running.add(this.container);
    this.onEvent?.("start", this.container);
    await sleep(300); // podman is still finishing `kube play` while the kubelet syncs
  }

  async listContainers(): Promise<PodmanContainer[]> {
    this.listCalls++;
    return [...this.running].map((name) => ({
      id: name,
      name,
      podName: "",
      isInfra: false,
      state: "running",
      exitCode: 0,
      exited: false,
      startedAt: Math.floor(Date.now() / 1000),
      exitedAt: 0,
      labels: {},
    }));
  }

  async listPods(): Promise<string[]> {
    return [];
  }

  async listVolumes(): Promise<string[]> {
    return [];
  }

  async removePod(): Promise<void> {
    this.running.clear();
  }

  async createMemoryVolumes(): Promise<void> {}

  async removeVolumes(): Promise<void> {}
}

const POD = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "p1", namespace: "default", uid: "", resourceVersion: "", creationTimestamp: "" },
  spec: { containers: [{ name: "run", image: "busybox:1.36", command: ["sleep", "3600"] }] },
};

async function waitFor(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`${what} not within 5 s`);
    await sleep(20);
  }
}

describe("the local cluster's kubelet", () => {
  it("records Created before Started when podman reports the container running before kube play returns", async () => {
    const store = new ObjectStore();
    const podman = new EagerPodman(formatPodmanContainerName(`lc-${INSTANCE}-default-p1`, "run"));
    const kubelet = new Kubelet({
      store,
      events: createEventRecorder(store),
      faults: new FaultInjector(),
      podman: podman as unknown as PodmanClient,
      instanceId: INSTANCE,
      pollIntervalMs: 60_000,
    });
    kubelet.start();
    try {
      store.create("pods", {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "p1", namespace: "default", uid: "", resourceVersion: "", creationTimestamp: "" },
        spec: { containers: [{ name: "run", image: "busybox:1.36", command: ["sleep", "3600"] }] },
      });
      const reasons = (): string[] =>
        store
          .list("events", "default")
          .filter((e) => e.involvedObject?.name === "p1")
          .map((e) => e.reason);
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline && !(reasons().includes("Started") && reasons().includes("Created")))
        await sleep(20);
      await sleep(400); // past kube play's return: nothing is recorded twice
      assert.deepEqual(reasons(), ["Scheduled", "Pulled", "Created", "Started"]);
      assert.equal(store.get("pods", "default", "p1")?.status?.phase, "Running");
    } finally {
      await kubelet.stop();
    }
  });

  it("reads podman's state on a container event while its pod runs, and not for the events of a pod being deleted", async () => {
    const store = new ObjectStore();
    const container = formatPodmanContainerName(`lc-${INSTANCE}-default-p1`, "run");
    const podman = new EagerPodman(container);
    const kubelet = new Kubelet({
      store,
      events: createEventRecorder(store),
      faults: new FaultInjector(),
      podman: podman as unknown as PodmanClient,
      instanceId: INSTANCE,
      pollIntervalMs: 60_000,
    });
    kubelet.start();
    try {
      store.create("pods", structuredClone(POD));
      await waitFor("the pod running", () => store.get("pods", "default", "p1")?.status?.phase === "Running");
      await sleep(400); // past kube play's return and its sync
      const running = podman.listCalls;
      podman.onEvent?.("died", container);
      await waitFor("a read after the died event", () => podman.listCalls > running);

      store.mutate("pods", "default", "p1", (p) => {
        p.metadata.deletionTimestamp = new Date().toISOString();
        p.metadata.deletionGracePeriodSeconds = 0;
      });
      await waitFor("the pod removed", () => store.get("pods", "default", "p1") === undefined);
      const deleted = podman.listCalls;
      for (const status of ["died", "cleanup", "remove"]) podman.onEvent?.(status, container);
      await sleep(300);
      assert.equal(podman.listCalls, deleted, "no pod starting or running: nothing to read podman's state for");
    } finally {
      await kubelet.stop();
    }
  });
});
