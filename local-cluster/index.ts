// The programmatic entry: start a local cluster in-process, drive its faults, inspect podman, and stop it cleanly.

import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AccessControl } from "./access-control.js";
import { ClaimStorage } from "./claims.js";
import { ensureNamespace } from "./api-handler.js";
import { Deleter } from "./deletion.js";
import { createEventRecorder } from "./events.js";
import {
  FaultInjector,
  parseFaultConfig,
  type FaultConfig,
  type FaultFiring,
  type ParsedFaultConfig,
} from "./faults.js";
import { JobController } from "./job-controller.js";
import { buildKubeconfig } from "./kubeconfig.js";
import { INSTANCE_LABEL, Kubelet, NODE_NAME } from "./kubelet.js";
import { buildNodeObject, NodePool, type NodeSpan, type ScaleFromZeroOptions } from "./node-pool.js";
import { PodmanClient } from "./podman.js";
import { pruneOrphanedPods } from "./prune.js";
import { ApiServer } from "./server.js";
import { ObjectStore } from "./store.js";
import { makeServingCertificate } from "./tls.js";
import { TokenAuthority, type IssuedToken } from "./tokens.js";
import type { KubeObject } from "./types.js";

export type { FaultConfig, ParsedFaultConfig, FaultFiring } from "./faults.js";
export { FaultConfigSchema, parseFaultConfig } from "./faults.js";
export type { KubeObject } from "./types.js";
export type { IssuedToken } from "./tokens.js";
export { INSTANCE_LABEL, NODE_NAME } from "./kubelet.js";
export { countDemand, parseJoinHold, type NodeSpan, type ScaleFromZeroOptions } from "./node-pool.js";

export interface LocalClusterOptions {
  /** API port (default 0: a free port). */
  port?: number;
  /** Admin port for /_faults and /_state, which stays up while the serverDown fault is active (default 0: a free port). */
  adminPort?: number;
  host?: string;
  /** Where the kubeconfig is written (default: a new temporary directory, removed by stop()). */
  dir?: string;
  /** Initial faults (validated). */
  faults?: FaultConfig;
  /** "podman" (default) runs pods as real containers; "none" leaves them Pending (FailedScheduling), for machines without podman. */
  runtime?: "podman" | "none";
  podmanBinary?: string;
  /** Namespace written into the kubeconfig context (default "default"). */
  namespace?: string;
  /** Cap on pod termination grace periods, seconds (default 10). */
  maxGraceSeconds?: number;
  /** Delay before a Job replaces a failed pod, ms (default 1000). */
  jobRetryDelayMs?: number;
  /** Seconds between ErrImagePull and ImagePullBackOff (default 2). */
  imageBackOffSeconds?: number;
  /** Identifies this cluster's podman pods (label io.knotless.local-cluster=ID); default random. */
  instanceId?: string;
  logRequests?: boolean;
  /** Keep every request on the API port (method and URL with its query) for `requests()` (default false). */
  recordRequests?: boolean;
  /**
   * Serve the API port over HTTPS with a fresh self-signed certificate (made with openssl; the kubeconfig carries it
   * as certificate-authority-data). Needed for bearer tokens: kubectl sends a kubeconfig's token only over https.
   */
  tls?: boolean;
  /** Remove podman pods left by local clusters whose process died (default true). */
  pruneOrphans?: boolean;
  /**
   * Scale from zero, like the hosted tenant clusters: no node until a pod needs one, a new node Ready `joinSeconds`
   * after the scale-up, each node with a capacity (default 2 cpu, 4Gi), and every node gone `holdSeconds` after the
   * last demand. Absent: one static node, always Ready, whose capacity is not enforced.
   */
  scaleFromZero?: ScaleFromZeroOptions;
  /** How often a watch with allowWatchBookmarks gets a BOOKMARK, seconds (default 60, as an API server). */
  watchBookmarkSeconds?: number;
  /** How many changes the store keeps for watches to resume from; older resourceVersions get 410 Gone (default 5000). */
  watchHistoryLimit?: number;
  /**
   * Every emptyDir as tmpfs, not only those with `medium: Memory` (always tmpfs, as a kubelet makes them): for benches
   * that measure a transport, not this machine's disk writeback (default false).
   */
  emptyDirsInMemory?: boolean;
}

export interface LocalCluster {
  readonly url: string;
  readonly adminUrl: string;
  readonly kubeconfigPath: string;
  readonly dir: string;
  readonly instanceId: string;
  /** Replaces every fault (validated; counters reset). */
  setFaults(faults: FaultConfig): void;
  /** Removes every fault (and brings the API back if it was down). */
  clearFaults(): void;
  faults(): ParsedFaultConfig;
  /** Every fault firing since start, most recent last. */
  faultFirings(): FaultFiring[];
  /** Every node of the scale-from-zero mode so far: when it was rented, Ready and removed (empty in the static mode). */
  nodeHistory(): NodeSpan[];
  /** Every ServiceAccount token issued so far (who, audiences, issue and expiry times; never the token itself). */
  issuedTokens(): IssuedToken[];
  /** Ends the lifetime of the matching tokens now, as if their expiry had passed (tokens cannot be made to last less than 10 minutes). */
  expireTokens(filter?: { namespace?: string; serviceAccount?: string }): number;
  /** Objects of one resource (`pods`, `jobs.batch`, `events`, ...), optionally in one namespace. */
  objects(storeKey: string, namespace?: string): KubeObject[];
  /** Every object of every resource now in the store. */
  allObjects(): { resource: string; object: KubeObject }[];
  /**
   * Every version of every object the store has held, deleted ones included, oldest first (the store keeps its last
   * 5000 changes: `complete` says whether they reach back to its first).
   */
  objectHistory(): { changes: { type: string; resource: string; object: KubeObject }[]; complete: boolean };
  /** Every request on the API port so far, exec upgrades included, when started with `recordRequests`; else empty. */
  requests(): { method: string; url: string; upgrade: boolean }[];
  /** Names of podman containers (infra included) this cluster made that still exist. */
  podmanContainers(): Promise<string[]>;
  /** Names of podman pods this cluster made that still exist. */
  podmanPods(): Promise<string[]>;
  /** The host directory of a PersistentVolumeClaim (whether or not a pod has made it yet), or undefined when there is no such claim. */
  claimDirectory(namespace: string, name: string): string | undefined;
  /** Names of podman volumes (one per pod emptyDir) this cluster made that still exist. */
  podmanVolumes(): Promise<string[]>;
  /**
   * Runs a command in a pod's container directly through podman, bypassing the API and every fault (for checks
   * such as "no process of the step is left"); fails when the container is not running.
   */
  podExec(
    namespace: string,
    pod: string,
    command: readonly string[],
    container?: string,
  ): Promise<{ code: number; stdout: string; stderr: string }>;
  /** Stops serving and removes every pod and container it made; safe to call twice. */
  stop(): Promise<void>;
}

export async function startLocalCluster(options: LocalClusterOptions = {}): Promise<LocalCluster> {
  const instanceId = options.instanceId ?? randomBytes(3).toString("hex");
  const ownDir = !options.dir;
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), "local-cluster-")));
  await mkdir(dir, { recursive: true });

  const store = new ObjectStore(options.watchHistoryLimit);
  const faults = new FaultInjector();
  if (options.faults) faults.set(parseFaultConfig(options.faults));
  const events = createEventRecorder(store);
  const deleter = new Deleter(store);
  const podman = options.runtime === "none" ? undefined : new PodmanClient({ binary: options.podmanBinary });
  if (podman && options.pruneOrphans !== false) {
    const pruned = await pruneOrphanedPods(podman).catch(() => []);
    if (pruned.length > 0)
      console.error(`local-cluster: removed ${pruned.length} pod(s) left by dead local clusters: ${pruned.join(", ")}`);
  }
  const claims = new ClaimStorage(store, join(dir, "claims"));
  const nodes = options.scaleFromZero
    ? new NodePool({ store, events, deleter, config: options.scaleFromZero })
    : undefined;
  const kubelet = new Kubelet({
    store,
    nodes,
    claims,
    events,
    faults,
    podman,
    instanceId,
    maxGraceSeconds: options.maxGraceSeconds,
    imageBackOffSeconds: options.imageBackOffSeconds,
    emptyDirsInMemory: options.emptyDirsInMemory,
  });
  const jobs = new JobController({ store, events, deleter, retryDelayMs: options.jobRetryDelayMs });
  for (const ns of ["default", "kube-system", options.namespace ?? "default"]) ensureNamespace(store, ns);
  if (!nodes) store.create("nodes", buildNodeObject(NODE_NAME, "10.0.0.1"));

  const label = `${INSTANCE_LABEL}=${instanceId}`;
  const podmanContainers = async (): Promise<string[]> =>
    podman ? (await podman.listContainers(label)).map((c) => c.name) : [];
  const podmanPods = async (): Promise<string[]> => (podman ? podman.listPods(label) : []);
  const podmanVolumes = async (): Promise<string[]> => (podman ? podman.listVolumes(kubelet.volumePrefix) : []);

  const requests: { method: string; url: string; upgrade: boolean }[] = [];
  const tokens = new TokenAuthority();
  const tls = options.tls ? await makeServingCertificate(dir, options.host ?? "127.0.0.1") : undefined;
  const adminToken = tls ? `lc-admin.${randomBytes(32).toString("base64url")}` : undefined;
  const server = new ApiServer({
    tls,
    store,
    access: new AccessControl(store, tokens, adminToken),
    faults,
    deleter,
    kubelet,
    podman,
    ...(options.watchBookmarkSeconds === undefined ? {} : { watchBookmarkMs: options.watchBookmarkSeconds * 1000 }),
    logRequests: options.logRequests,
    ...(options.recordRequests
      ? { onRequest: (request: { method: string; url: string; upgrade: boolean }) => void requests.push(request) }
      : {}),
    describeState: async () => ({
      instanceId,
      nodes: store.list("nodes").map((o) => o.metadata.name),
      jobs: store.list("jobs.batch").map((o) => `${o.metadata.namespace}/${o.metadata.name}`),
      pods: store
        .list("pods")
        .map((o) => ({ name: `${o.metadata.namespace}/${o.metadata.name}`, phase: o.status?.phase })),
      podmanContainers: await podmanContainers().catch((e) => [`error: ${String(e)}`]),
    }),
  });
  nodes?.start();
  claims.start();
  kubelet.start();
  jobs.start();
  await server.listen(options.port ?? 0, options.adminPort ?? 0, options.host ?? "127.0.0.1");
  const kubeconfigPath = join(dir, "kubeconfig");
  const tlsConfig = tls && adminToken ? { caPem: tls.cert, adminToken } : undefined;
  // With TLS it holds the admin's token: for its owner's eyes only.
  await writeFile(kubeconfigPath, buildKubeconfig(server.url, options.namespace ?? "default", tlsConfig), {
    mode: tlsConfig ? 0o600 : 0o644,
  });

  let stopping: Promise<void> | undefined;
  return {
    url: server.url,
    adminUrl: server.adminUrl,
    kubeconfigPath,
    dir,
    instanceId,
    setFaults: (f) => faults.set(parseFaultConfig(f)),
    clearFaults: () => faults.set({}),
    faults: () => faults.current,
    faultFirings: () => faults.history(),
    nodeHistory: () => nodes?.history() ?? [],
    issuedTokens: () => tokens.list().map((t) => ({ ...t, audiences: [...t.audiences] })),
    expireTokens: (filter) => tokens.expire(filter),
    objects: (storeKey, namespace) => store.list(storeKey, namespace),
    allObjects: () => store.listAll(),
    objectHistory: () => {
      const { events, complete } = store.changes();
      return { changes: events.map(({ type, resource, object }) => ({ type, resource, object })), complete };
    },
    requests: () => requests.map((request) => ({ ...request })),
    podmanContainers,
    claimDirectory: (namespace, name) => {
      const claim = store.get("persistentvolumeclaims", namespace, name);
      return claim ? claims.directoryOf(claim) : undefined;
    },
    podmanPods,
    podmanVolumes,
    podExec: async (namespace, pod, command, container = "run") => {
      const name = kubelet.findContainer(namespace, pod, container);
      if (!name || !podman) throw new Error(`no running container ${container} in pod ${namespace}/${pod}`);
      return podman.run(["exec", name, ...command]);
    },
    stop: () => {
      stopping ??= (async () => {
        jobs.stop();
        nodes?.stop();
        await server.close();
        await kubelet.stop();
        await claims.stop();
        if (ownDir) await rm(dir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}

/** Whether this machine can run the cluster's pods: undefined when it can, otherwise the reason (for skipping tests). */
export async function checkContainersUsable(podmanBinary?: string): Promise<string | undefined> {
  return new PodmanClient({ binary: podmanBinary }).checkUsable();
}
