// Test helper: starts a local cluster for one test file, builds Job manifests, and waits for conditions.

import {
  startLocalCluster,
  checkContainersUsable,
  type LocalCluster,
  type LocalClusterOptions,
} from "../../local-cluster/index.js";
import { runKubectl, type KubectlCallOptions, type KubectlResult } from "./kubectl-runner.js";

export const NAMESPACE = "ci";

/** Why container tests must skip on this machine, or undefined when podman can run pods (checked once). */
let usable: Promise<string | undefined> | undefined;
export function findContainerSkipReason(): Promise<string | undefined> {
  usable ??= checkContainersUsable().then((reason) => (reason ? `containers unavailable: ${reason}` : undefined));
  return usable;
}

export interface TestCluster {
  cluster: LocalCluster;
  kubectl(binary: string, args: readonly string[], options?: KubectlCallOptions): Promise<KubectlResult>;
}

export async function startTestCluster(options: LocalClusterOptions = {}): Promise<TestCluster> {
  const cluster = await startLocalCluster({
    namespace: NAMESPACE,
    maxGraceSeconds: 2,
    jobRetryDelayMs: 200,
    imageBackOffSeconds: 1,
    ...options,
  });
  return {
    cluster,
    kubectl: (binary, args, opts) =>
      runKubectl(binary, cluster.kubeconfigPath, ["--namespace", NAMESPACE, ...args], opts),
  };
}

export interface JobManifestOptions {
  name: string;
  labels?: Record<string, string>;
  command?: string[];
  image?: string;
  backoffLimit?: number;
  activeDeadlineSeconds?: number;
  ttlSecondsAfterFinished?: number;
}

/** A run Job like the runner's: one container "run" idling in /work on an emptyDir until deleted. */
export function buildJobManifest(o: JobManifestOptions): string {
  const labels = o.labels ?? { "knotless.dev/run-id": o.name };
  return JSON.stringify({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name: o.name, labels },
    spec: {
      backoffLimit: o.backoffLimit ?? 0,
      ...(o.activeDeadlineSeconds !== undefined ? { activeDeadlineSeconds: o.activeDeadlineSeconds } : {}),
      ...(o.ttlSecondsAfterFinished !== undefined ? { ttlSecondsAfterFinished: o.ttlSecondsAfterFinished } : {}),
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: "Never",
          terminationGracePeriodSeconds: 1,
          volumes: [{ name: "work", emptyDir: {} }],
          containers: [
            {
              name: "run",
              image: o.image ?? "docker.io/library/busybox:1.36",
              command: o.command ?? ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"],
              workingDir: "/work",
              env: [{ name: "CI", value: "true" }],
              volumeMounts: [{ name: "work", mountPath: "/work" }],
            },
          ],
        },
      },
    },
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs` with `what`. */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** A one-line account of a Job's pods and their events, for failure messages. */
export function describeJobPods(tc: TestCluster, job: string): string {
  const pods = tc.cluster.objects("pods", NAMESPACE).filter((p) => p.metadata.labels?.["job-name"] === job);
  const events = tc.cluster
    .objects("events", NAMESPACE)
    .filter((e) => String(e.involvedObject?.name ?? "").startsWith(job));
  return JSON.stringify({
    pods: pods.map((p) => ({
      name: p.metadata.name,
      phase: p.status?.phase,
      containers: p.status?.containerStatuses?.map((c: any) => c.state),
    })),
    events: events.map((e) => `${e.involvedObject.name} ${e.reason}: ${e.message}`),
  });
}

/** The name of the Job's pod once its container runs (generous: podman is slow on a loaded machine). */
export async function waitForRunningPod(tc: TestCluster, job: string, timeoutMs = 60_000): Promise<string> {
  try {
    return await waitFor(
      `a Running pod of job ${job}`,
      () => {
        const pod = tc.cluster
          .objects("pods", NAMESPACE)
          .find((p) => p.metadata.labels?.["job-name"] === job && p.status?.phase === "Running");
        return pod?.metadata.name;
      },
      timeoutMs,
    );
  } catch (e) {
    throw new Error(`${(e as Error).message}: ${describeJobPods(tc, job)}`, { cause: e });
  }
}
