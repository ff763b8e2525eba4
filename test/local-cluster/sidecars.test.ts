// End-to-end: native sidecars (init containers with restartPolicy Always) run beside the run container, share its localhost, and report their readiness probes.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  describeJobPods,
  findContainerSkipReason,
  NAMESPACE,
  startTestCluster,
  waitFor,
  waitForRunningPod,
  type TestCluster,
} from "./harness.js";
import { listKubectlBinaries } from "./kubectl-runner.js";

const skip = await findContainerSkipReason();
const BUSYBOX = "docker.io/library/busybox:1.36";

function buildSidecarJob(name: string): string {
  const labels = { "knotless.dev/run-id": name };
  return JSON.stringify({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name, labels },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: "Never",
          terminationGracePeriodSeconds: 1,
          initContainers: [
            {
              name: "echo",
              image: BUSYBOX,
              restartPolicy: "Always",
              // Listens only after 2 s: its probe fails first, then passes.
              command: ["sh", "-c", "sleep 2; while true; do echo hello from the sidecar | nc -l -p 7000; done"],
              readinessProbe: { tcpSocket: { port: 7000 }, periodSeconds: 1, timeoutSeconds: 1 },
            },
            {
              name: "flag",
              image: BUSYBOX,
              restartPolicy: "Always",
              command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"],
              readinessProbe: { exec: { command: ["test", "-e", "/tmp/ready"] }, periodSeconds: 1 },
            },
          ],
          containers: [
            { name: "run", image: BUSYBOX, command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"] },
          ],
        },
      },
    },
  });
}

describe("native sidecars on the local cluster", { skip }, () => {
  let tc: TestCluster;
  before(async () => {
    tc = await startTestCluster();
  });
  after(async () => {
    await tc?.cluster.stop();
    if (tc) assert.deepEqual(await tc.cluster.podmanPods(), [], "no podman pod is left after stop()");
  });

  test("a sidecar runs beside the run container, is reached on localhost, and is ready only once its probe passes", async () => {
    const kubectl = listKubectlBinaries()[0]!;
    const created = await tc.kubectl(kubectl.path, ["create", "-f", "-"], { stdin: buildSidecarJob("sidecars") });
    assert.equal(created.code, 0, created.stderr);
    const pod = await waitForRunningPod(tc, "sidecars");
    const statuses = (): any[] =>
      tc.cluster.objects("pods", NAMESPACE).find((p) => p.metadata.name === pod)?.status?.initContainerStatuses ?? [];
    const ready = (name: string): boolean | undefined => statuses().find((s) => s.name === name)?.ready;
    assert.deepEqual(
      statuses().map((s) => s.name),
      ["echo", "flag"],
      describeJobPods(tc, "sidecars"),
    );
    await waitFor("the tcp probe to pass", () => (ready("echo") ? true : undefined), 30_000);
    const reply = await tc.cluster.podExec(NAMESPACE, pod, ["sh", "-c", "nc 127.0.0.1 7000 </dev/null"], "run");
    assert.equal(reply.stdout.trim(), "hello from the sidecar", reply.stderr);

    assert.equal(ready("flag"), false, "the exec probe fails while /tmp/ready is missing");
    const podReady = (): string | undefined =>
      tc.cluster
        .objects("pods", NAMESPACE)
        .find((p) => p.metadata.name === pod)
        ?.status?.conditions?.find((c: any) => c.type === "Ready")?.status;
    assert.equal(podReady(), "False", "the pod is not Ready while a sidecar is not");
    const touched = await tc.cluster.podExec(NAMESPACE, pod, ["touch", "/tmp/ready"], "flag");
    assert.equal(touched.code, 0, touched.stderr);
    await waitFor("the exec probe to pass", () => (ready("flag") ? true : undefined), 30_000);
    await waitFor("the pod to be Ready", () => (podReady() === "True" ? true : undefined), 10_000);

    const logs = await tc.kubectl(kubectl.path, ["logs", pod, "-c", "echo", "--tail", "5"]);
    assert.equal(logs.code, 0, logs.stderr);
    const deleted = await tc.kubectl(kubectl.path, ["delete", "job", "sidecars", "--wait=false"]);
    assert.equal(deleted.code, 0, deleted.stderr);
  });
});
