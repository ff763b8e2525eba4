// What end-to-end tests on the local cluster share: whether podman can run pods here, the pods' way to the host, waiting, and "nothing left behind".
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { LocalCluster } from "../../local-cluster/index.js";

const SDK = "/usr/lib/google-cloud-sdk/bin";
/** The real kubectl binaries the end-to-end tests run: 1.30 and 1.33, where installed. */
export const E2E_KUBECTLS = ["1.30", "1.33"].map((v) => join(SDK, `kubectl.${v}`)).filter(existsSync);

/** Why the tests skip here, or false when podman runs the local busybox image. */
export function findPodmanSkipReason(): string | false {
  const works =
    spawnSync("podman", ["image", "exists", "docker.io/library/busybox:1.36"], { stdio: "ignore" }).status === 0;
  return works ? false : "podman with the local busybox image is not available (run scripts/setup-containers.sh)";
}

/** The local cluster's pod network gateway: the pods are podman containers on podman-default-kube-network, which reach the host there. */
export function readPodGateway(): string {
  return execFileSync(
    "podman",
    ["network", "inspect", "podman-default-kube-network", "--format", "{{range .Subnets}}{{.Gateway}}{{end}}"],
    { encoding: "utf8" },
  ).trim();
}

/** Polls `check` every 200 ms; fails after `timeoutMs`; resolves with how long it took. */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) assert.fail(`${what} not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return Date.now() - started;
}

/** No Job in the server, no pod, no podman container. */
export async function assertNothingLeft(cluster: LocalCluster): Promise<void> {
  await waitUntil("podman containers gone", async () => (await cluster.podmanContainers()).length === 0, 30_000);
  assert.deepEqual(cluster.objects("jobs.batch"), []);
  await waitUntil("pods gone from the server", () => cluster.objects("pods").length === 0, 30_000);
  assert.deepEqual(
    cluster.objects("poddisruptionbudgets.policy").map((budget) => budget.metadata.name),
    [],
    "a PodDisruptionBudget was left",
  );
}

/**
 * How many times the local cluster fired `fault` since `sinceMs` (a Date.now() taken before the run): its history
 * spans the whole file, so a check of the history alone would pass on an earlier test's firings.
 */
export function countFiringsSince(cluster: LocalCluster, fault: string, sinceMs: number): number {
  return cluster.faultFirings().filter((f) => f.fault === fault && Date.parse(f.at) >= sinceMs).length;
}

/**
 * How long after the local cluster evicted `pod` (its Evicted event) the run ended: the runner's reaction to the
 * eviction, not the Job's create and the pod's start, which a loaded machine stretches.
 */
export function measureEvictionToEnd(cluster: LocalCluster, pod: string | undefined, finishedAt: string): number {
  const evicted = cluster.objects("events").find((e) => e.reason === "Evicted" && e.involvedObject?.name === pod);
  assert.ok(evicted?.firstTimestamp, `no Evicted event for pod ${pod}`);
  return Date.parse(finishedAt) - Date.parse(String(evicted.firstTimestamp));
}
