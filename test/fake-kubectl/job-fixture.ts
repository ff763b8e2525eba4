// A Job manifest like the product's (keep-alive container, emptyDir volumes) and a helper that creates it in a fake cluster.
import assert from "node:assert/strict";
import type { FakeCluster } from "../fixtures/fake-kubectl/harness.js";

export const NAMESPACE = "ci";

/** The global flags the product puts before every verb. */
export function buildGlobalArgs(cluster: FakeCluster): string[] {
  return ["--kubeconfig", cluster.kubeconfigPath, "--context", "fake", "--namespace", NAMESPACE];
}

export function buildJobManifest(name: string, runId: string): string {
  return JSON.stringify({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name, labels: { "knotless.dev/run-id": runId } },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { labels: { "knotless.dev/run-id": runId, app: "knotless-run" } },
        spec: {
          restartPolicy: "Never",
          containers: [
            {
              name: "run",
              image: "docker.io/library/busybox:1.36",
              command: ["sh", "-c", 'trap "exit 0" TERM; while :; do sleep 1; done'],
              env: [
                { name: "CI", value: "true" },
                { name: "TANGLED_REPO", value: "did:plc:abc/repo" },
              ],
              volumeMounts: ["work", "steps", "outputs", "knotless"].map((v) => ({ name: v, mountPath: `/${v}` })),
            },
          ],
          volumes: ["work", "steps", "outputs", "knotless"].map((v) => ({ name: v, emptyDir: {} })),
        },
      },
    },
  });
}

/** Creates the Job and returns the name of its pod. */
export async function createJob(cluster: FakeCluster, name: string, runId = name): Promise<string> {
  const created = await cluster.kubectl(
    [...buildGlobalArgs(cluster), "create", "--request-timeout", "30s", "-f", "-", "-o", "name"],
    { stdin: buildJobManifest(name, runId) },
  );
  assert.equal(created.stderr, "");
  assert.equal(created.stdout, `job.batch/${name}\n`);
  const pods = await cluster.pods();
  const pod = pods.find((p) => p.jobName === name);
  assert.ok(pod, "the Job has a pod");
  return pod.name;
}

/** Polls until check() is true (for effects of detached processes). */
export async function waitUntil(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}
