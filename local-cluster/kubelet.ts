// The node: runs every Pod object as a podman pod, mirrors podman's container state into pod status, applies pod faults.
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { describeSelectorMismatch, matchesNode } from "./node-match.js";
import { CLAIMS_STORE_KEY, listPodClaimNames, type ClaimStorage } from "./claims.js";
import type { EventRecorder } from "./events.js";
import type { FaultInjector } from "./faults.js";
import type { NodePool } from "./node-pool.js";
import { applyContainerStates, setCondition } from "./pod-status.js";
import {
  buildPodmanPod,
  formatPodmanContainerName,
  isSafeSubPath,
  listLongRunningContainers,
  listSidecars,
  type EnvLookup,
} from "./podman-pod-yaml.js";
import { readPodIp, runProbe, type ReadinessProbe } from "./prober.js";
import type { PodmanClient, PodmanContainer } from "./podman.js";
import type { ObjectStore } from "./store.js";
import { formatTimestamp } from "./time.js";
import type { KubeObject, StoreEvent } from "./types.js";

export const NODE_NAME = "local-node-1";
export const INSTANCE_LABEL = "io.knotless.local-cluster";
/** The pid of the process whose cluster made a podman pod, so pods of a crashed process can be pruned. */
export const OWNER_PID_LABEL = "io.knotless.local-cluster.pid";

type Stage = "scheduling" | "pulling" | "starting" | "running" | "finished" | "stuck" | "evicted" | "deleting";

interface PodRuntime {
  uid: string;
  namespace: string;
  name: string;
  podmanName: string;
  stage: Stage;
  timers: NodeJS.Timeout[];
  /** Resolvers of pending sleeps, called when the pod's timers are cancelled so no lifecycle promise hangs. */
  wakers: (() => void)[];
  /** The Created events were recorded (after `kube play`, or before Started when a sync saw the container first). */
  createdReported: boolean;
  startedReported: boolean;
  played: boolean;
  /** podman volumes made for the pod's emptyDirs (podman pod rm leaves them behind). */
  volumes: string[];
  /** The `podman kube play` in flight, so a removal waits for it instead of racing it. */
  playing?: Promise<void>;
  /** The node it was bound to. */
  node: string;
  /** Each probed container's last readinessProbe result. */
  probes: Map<string, boolean>;
  /** The pod's IP as podman gave it, once a tcp probe needed it. */
  podIp?: string;
  /** The prober loop was started (once the pod runs). */
  probing: boolean;
}

export interface KubeletOptions {
  store: ObjectStore;
  events: EventRecorder;
  faults: FaultInjector;
  /** Undefined = no container runtime: pods stay Pending with a FailedScheduling event. */
  podman: PodmanClient | undefined;
  instanceId: string;
  /** Upper bound on a pod's termination grace period, to keep tests fast (default 10 s). */
  maxGraceSeconds?: number;
  /**
   * Safety-net poll of podman state while pods run, in ms (default 10 s): podman's events trigger every refresh a
   * pod needs; the poll only catches an event the stream lost.
   */
  pollIntervalMs?: number;
  /** Seconds between ErrImagePull and ImagePullBackOff (default 2). */
  imageBackOffSeconds?: number;
  /** The scale-from-zero mode's scheduler; absent: every pod goes to the one static node at once. */
  nodes?: NodePool;
  /** Where PersistentVolumeClaims keep their bytes; absent: a pod with a claim volume gets an empty directory. */
  claims?: ClaimStorage;
  /** Every emptyDir as tmpfs, not only `medium: Memory` ones (default false). */
  emptyDirsInMemory?: boolean;
}

export class Kubelet {
  private readonly pods = new Map<string, PodRuntime>();
  private readonly opts: Required<Omit<KubeletOptions, "podman" | "nodes" | "claims" | "emptyDirsInMemory">> & {
    emptyDirsInMemory: boolean;
    podman: PodmanClient | undefined;
    nodes: NodePool | undefined;
    claims: ClaimStorage | undefined;
  };
  private unsubscribe: (() => void) | undefined;
  private stopEvents: (() => void) | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private syncing: Promise<void> | undefined;
  private syncAgain = false;
  private debounce: NodeJS.Timeout | undefined;
  private ipCounter = 2;
  private readonly pending = new Set<Promise<unknown>>();
  private readonly presentImages = new Set<string>();
  private stopped = false;

  constructor(options: KubeletOptions) {
    this.opts = {
      ...options,
      maxGraceSeconds: options.maxGraceSeconds ?? 10,
      pollIntervalMs: options.pollIntervalMs ?? 10_000,
      imageBackOffSeconds: options.imageBackOffSeconds ?? 2,
      nodes: options.nodes,
      claims: options.claims,
      emptyDirsInMemory: options.emptyDirsInMemory ?? false,
    };
  }

  get instanceLabel(): string {
    return `${INSTANCE_LABEL}=${this.opts.instanceId}`;
  }

  /** Starts watching the store (and podman events); call once. */
  start(): void {
    this.unsubscribe = this.opts.store.subscribe((e) => this.onStoreEvent(e));
    // Every exec into a container is two events (exec, exec_died) that change no container's state: a sync for each
    // cost a `podman ps` per event, ~1 s of CPU in an example run of ~12 s of CPU on this machine.
    const onEvent = (status: string): void => {
      if (!status.startsWith("exec")) this.scheduleSync(30);
    };
    // A restarted stream may have missed events while it was down: read podman's state once.
    const onRestart = (): void => this.scheduleSync(0);
    if (this.opts.podman) this.stopEvents = this.opts.podman.watchEvents(this.instanceLabel, onEvent, onRestart);
    this.pollTimer = setInterval(() => this.scheduleSync(0), this.opts.pollIntervalMs);
    this.pollTimer.unref();
  }

  /** The podman container running container `container` of a pod, if the pod has been started. */
  findContainer(namespace: string, podName: string, container: string): string | undefined {
    const rt = [...this.pods.values()].find((p) => p.namespace === namespace && p.name === podName);
    if (!rt || !rt.played) return undefined;
    return formatPodmanContainerName(rt.podmanName, container);
  }

  /** Stops every timer and removes every podman pod this cluster made (also ones from a crashed earlier run with the same id). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.stopEvents?.();
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.debounce) clearTimeout(this.debounce);
    for (const rt of this.pods.values()) this.cancelTimers(rt);
    await Promise.allSettled([...this.pending]);
    const podman = this.opts.podman;
    if (!podman) return;
    const names = new Set([...this.pods.values()].filter((p) => p.played).map((p) => p.podmanName));
    for (let round = 0; round < 3; round++) {
      for (const n of await podman.listPods(this.instanceLabel).catch(() => [])) names.add(n);
      if (names.size === 0) return;
      const results = await Promise.allSettled([...names].map((n) => podman.removePod(n, 0)));
      for (const r of results) if (r.status === "rejected") console.error(`local-cluster kubelet: ${String(r.reason)}`);
      names.clear();
    }
    const volumes = await podman.listVolumes(this.volumePrefix).catch(() => []);
    await podman.removeVolumes(volumes).catch((e) => console.error(`local-cluster kubelet: ${String(e)}`));
  }

  /** Every podman name this cluster makes starts with it. */
  get volumePrefix(): string {
    return `lc-${this.opts.instanceId}-`;
  }

  private track<T>(p: Promise<T>): void {
    this.pending.add(p);
    p.catch((e) => console.error(`local-cluster kubelet: ${e instanceof Error ? e.message : String(e)}`)).finally(() =>
      this.pending.delete(p),
    );
  }

  private onStoreEvent(e: StoreEvent): void {
    if (e.resource === CLAIMS_STORE_KEY && e.type === "ADDED") {
      // Pods waiting for this claim try again now rather than at their next retry.
      for (const rt of this.pods.values()) if (rt.stage === "scheduling") rt.wakers.splice(0).forEach((wake) => wake());
      return;
    }
    if (e.resource !== "pods" || this.stopped) return;
    const pod = e.object;
    const rt = this.pods.get(pod.metadata.uid);
    if (e.type === "ADDED" && !rt) {
      const created = this.addRuntime(pod);
      this.track(this.runPod(created));
    } else if (e.type === "MODIFIED" && rt && pod.metadata.deletionTimestamp && rt.stage !== "deleting") {
      this.track(this.terminatePod(rt, pod.metadata.deletionGracePeriodSeconds ?? 30));
    } else if (e.type === "DELETED" && rt) {
      this.cancelTimers(rt);
      this.pods.delete(rt.uid);
      if (rt.stage !== "deleting" && rt.played) this.track(this.removePodmanPod(rt, 0));
    }
  }

  private addRuntime(pod: KubeObject): PodRuntime {
    const ns = pod.metadata.namespace ?? "default";
    const rt: PodRuntime = {
      uid: pod.metadata.uid,
      namespace: ns,
      name: pod.metadata.name,
      podmanName: `lc-${this.opts.instanceId}-${ns}-${pod.metadata.name}`,
      stage: "scheduling",
      timers: [],
      wakers: [],
      createdReported: false,
      startedReported: false,
      played: false,
      volumes: [],
      node: NODE_NAME,
      probes: new Map(),
      probing: false,
    };
    this.pods.set(rt.uid, rt);
    return rt;
  }

  private current(rt: PodRuntime): KubeObject | undefined {
    const pod = this.opts.store.get("pods", rt.namespace, rt.name);
    return pod && pod.metadata.uid === rt.uid ? pod : undefined;
  }

  private mutatePod(rt: PodRuntime, change: (pod: KubeObject) => void): KubeObject | undefined {
    const pod = this.current(rt);
    if (!pod) return undefined;
    return this.opts.store.mutate("pods", rt.namespace, rt.name, change);
  }

  private sleep(rt: PodRuntime, ms: number): Promise<void> {
    return new Promise((resolve) => {
      rt.wakers.push(resolve);
      rt.timers.push(setTimeout(resolve, ms));
    });
  }

  private cancelTimers(rt: PodRuntime): void {
    rt.timers.forEach(clearTimeout);
    rt.timers = [];
    const wakers = rt.wakers;
    rt.wakers = [];
    wakers.forEach((w) => w());
  }

  private alive(rt: PodRuntime, stage: Stage): boolean {
    return !this.stopped && this.pods.get(rt.uid) === rt && rt.stage === stage && !!this.current(rt);
  }

  private async runPod(rt: PodRuntime): Promise<void> {
    const { events, faults } = this.opts;
    let pod = this.current(rt);
    if (!pod) return;
    this.mutatePod(rt, (p) => {
      p.status = { ...(p.status ?? {}), phase: "Pending", qosClass: p.status?.qosClass ?? "BestEffort" };
    });

    const subject = `${rt.namespace}/${rt.name}`;
    const delay = faults.take("schedulingDelay", subject);
    const noRuntime = !this.opts.podman;
    if (delay || noRuntime) {
      const until = Date.now() + (delay?.seconds ?? 0) * 1000;
      const message = noRuntime
        ? "0/0 nodes are available: the local cluster was started without a container runtime."
        : "0/0 nodes are available: no nodes available to schedule pods (the cluster is scaling up from zero nodes).";
      while (this.alive(rt, "scheduling") && (noRuntime || Date.now() < until)) {
        pod = this.mutatePod(rt, (p) => {
          p.status.conditions = setCondition(p.status.conditions, "PodScheduled", "False", "Unschedulable", message);
        });
        if (pod) events.record(pod, "Warning", "FailedScheduling", message, "default-scheduler");
        await this.sleep(rt, Math.min(5000, Math.max(50, until - Date.now())));
      }
    }
    if (!this.alive(rt, "scheduling")) return;
    await this.waitForClaims(rt);
    if (!this.alive(rt, "scheduling")) return;
    if (!this.opts.nodes) await this.waitForMatchingNode(rt);
    if (!this.alive(rt, "scheduling")) return;
    const current = this.current(rt);
    const node =
      current && this.opts.nodes ? await this.opts.nodes.schedule(current) : { name: NODE_NAME, ip: "10.0.0.1" };
    if (!node || !this.alive(rt, "scheduling")) return;
    rt.node = node.name;

    pod = this.mutatePod(rt, (p) => {
      p.spec.nodeName = node.name;
      p.status.hostIP = node.ip;
      p.status.hostIPs = [{ ip: node.ip }];
      p.status.podIP = `10.88.0.${this.ipCounter}`;
      p.status.podIPs = [{ ip: p.status.podIP }];
      p.status.startTime = formatTimestamp();
      p.status.conditions = setCondition(p.status.conditions, "PodScheduled", "True");
      p.status.conditions = setCondition(p.status.conditions, "Initialized", "True");
      p.status.conditions = setCondition(
        p.status.conditions,
        "Ready",
        "False",
        "ContainersNotReady",
        "containers with unready status",
      );
      p.status.conditions = setCondition(
        p.status.conditions,
        "ContainersReady",
        "False",
        "ContainersNotReady",
        "containers with unready status",
      );
      const creating = (c: any) => ({
        name: c.name,
        image: c.image,
        imageID: "",
        ready: false,
        started: false,
        restartCount: 0,
        state: { waiting: { reason: "ContainerCreating" } },
        lastState: {},
      });
      p.status.containerStatuses = (p.spec.containers ?? []).map(creating);
      const sidecars = listSidecars(p.spec);
      if (sidecars.length > 0) p.status.initContainerStatuses = sidecars.map(creating);
    });
    this.ipCounter = this.ipCounter >= 250 ? 2 : this.ipCounter + 1;
    if (!pod) return;
    events.record(
      pod,
      "Normal",
      "Scheduled",
      `Successfully assigned ${rt.namespace}/${rt.name} to ${rt.node}`,
      "default-scheduler",
    );
    rt.stage = "pulling";
    if (!(await this.pullImages(rt, pod))) return;
    await this.playPod(rt);
  }

  /**
   * The scheduler's VolumeBinding check: a pod whose claim is missing or being deleted stays Pending and
   * Unschedulable, with a FailedScheduling event (repeated every 5 s), until the claim is there.
   */
  private async waitForClaims(rt: PodRuntime): Promise<void> {
    const claims = this.opts.claims;
    if (!claims) return;
    for (;;) {
      const pod = this.current(rt);
      const why = pod ? claims.describeUnusableClaim(pod) : undefined;
      if (!pod || !why || !this.alive(rt, "scheduling")) return;
      const nodes = this.opts.store.list("nodes").length;
      const message = `0/${nodes} nodes are available: ${why}. preemption: 0/${nodes} nodes are available: ${nodes} Preemption is not helpful for scheduling.`;
      const updated = this.mutatePod(rt, (p) => {
        p.status.conditions = setCondition(p.status.conditions, "PodScheduled", "False", "Unschedulable", message);
      });
      if (updated) this.opts.events.record(updated, "Warning", "FailedScheduling", message, "default-scheduler");
      await this.sleep(rt, 5000);
    }
  }

  /**
   * The scheduler's NodeAffinity check in the static mode: a pod whose nodeSelector (or required node affinity) the
   * one node's labels do not meet stays Pending and Unschedulable, with a FailedScheduling event every 5 s, as with
   * no cluster autoscaler to add a node that would.
   */
  private async waitForMatchingNode(rt: PodRuntime): Promise<void> {
    for (;;) {
      const pod = this.current(rt);
      const nodes = this.opts.store.list("nodes");
      // A kubelet with no Node objects at all (a bare one, as unit tests make) has nothing to match against.
      if (
        !pod ||
        !this.alive(rt, "scheduling") ||
        nodes.length === 0 ||
        nodes.some((node) => matchesNode(pod, node.metadata.labels ?? {}))
      )
        return;
      const message = describeSelectorMismatch(nodes.length);
      const updated = this.mutatePod(rt, (p) => {
        p.status.conditions = setCondition(p.status.conditions, "PodScheduled", "False", "Unschedulable", message);
      });
      if (updated) this.opts.events.record(updated, "Warning", "FailedScheduling", message, "default-scheduler");
      await this.sleep(rt, 5000);
    }
  }

  /** The host directory of each claim the pod names, made on first use; undefined (and a FailedMount event) when one went away. */
  private async mountClaims(rt: PodRuntime, pod: KubeObject): Promise<Record<string, string> | undefined> {
    const claims = this.opts.claims;
    const dirs: Record<string, string> = {};
    if (!claims) return dirs;
    for (const name of listPodClaimNames(pod)) {
      const claim = this.opts.store.get(CLAIMS_STORE_KEY, rt.namespace, name);
      if (!claim) {
        this.opts.events.record(
          pod,
          "Warning",
          "FailedMount",
          `Unable to attach or mount volumes: persistentvolumeclaim "${name}" not found`,
        );
        return undefined;
      }
      dirs[name] = await claims.ensureDirectory(claim);
    }
    // A claim mounted with a subPath: the kubelet makes the directory when it is missing, as a real one does.
    const claimOfVolume = new Map<string, string>(
      (pod.spec?.volumes ?? []).flatMap((v: any) =>
        dirs[v?.persistentVolumeClaim?.claimName] === undefined
          ? []
          : [[v.name, dirs[v.persistentVolumeClaim.claimName]!]],
      ),
    );
    for (const c of pod.spec?.containers ?? []) {
      for (const m of c.volumeMounts ?? []) {
        const dir = claimOfVolume.get(m.name);
        if (dir !== undefined && typeof m.subPath === "string" && m.subPath !== "" && isSafeSubPath(m.subPath))
          await mkdir(join(dir, m.subPath), { recursive: true });
      }
    }
    return dirs;
  }

  /**
   * Checks each image locally (nothing is ever pulled); on a missing image or the fault, ErrImagePull then
   * ImagePullBackOff. A pod that names imagePullSecrets pulls from the private registry they are for: a Secret
   * missing from its namespace fails the pull as a kubelet's does (FailedToRetrieveImagePullSecret, then the
   * registry's refusal), naming the Secret.
   */
  private async pullImages(rt: PodRuntime, pod: KubeObject): Promise<boolean> {
    const { events, faults } = this.opts;
    const missing = (pod.spec.imagePullSecrets ?? [])
      .map((ref: { name?: string }) => ref.name ?? "")
      .filter((name: string) => !this.opts.store.get("secrets", rt.namespace, name));
    if (missing.length > 0) {
      events.record(
        pod,
        "Warning",
        "FailedToRetrieveImagePullSecret",
        `Unable to retrieve some image pull secrets (${missing.join(", ")}); attempting to pull the image may not succeed.`,
      );
    }
    for (const c of listLongRunningContainers(pod.spec)) {
      const fault =
        faults.take("imagePullFailure", `${rt.namespace}/${rt.name} ${c.image}`) ??
        (missing.length > 0
          ? {
              message: `rpc error: code = Unknown desc = failed to pull and unpack image "${c.image}": failed to authorize: the image pull secret ${missing.join(", ")} was not found in namespace ${rt.namespace} (Unable to retrieve some image pull secrets)`,
            }
          : undefined);
      const present = !fault && (await this.checkImagePresent(c.image));
      if (!this.alive(rt, "pulling")) return false;
      if (present) {
        events.record(pod, "Normal", "Pulled", `Container image "${c.image}" already present on machine`);
        continue;
      }
      const why =
        fault?.message ??
        (fault
          ? `rpc error: code = Unknown desc = failed to pull and unpack image "${c.image}": failed to resolve reference "${c.image}": unexpected status from HEAD request: 503 Service Unavailable`
          : `rpc error: code = Unknown desc = failed to pull image "${c.image}": no registry is reachable from the local cluster and the image is not present locally`);
      rt.stage = "stuck";
      events.record(pod, "Normal", "Pulling", `Pulling image "${c.image}"`);
      this.setWaiting(rt, c.name, "ErrImagePull", why);
      events.record(pod, "Warning", "Failed", `Failed to pull image "${c.image}": ${why}`);
      events.record(pod, "Warning", "Failed", "Error: ErrImagePull");
      await this.sleep(rt, this.opts.imageBackOffSeconds * 1000);
      if (!this.alive(rt, "stuck")) return false;
      const backOff = `Back-off pulling image "${c.image}"`;
      // Recent kubelets keep the pull's error in the back-off's message, so the reason survives ErrImagePull.
      this.setWaiting(rt, c.name, "ImagePullBackOff", `${backOff}: ErrImagePull: ${why}`);
      events.record(pod, "Normal", "BackOff", backOff);
      events.record(pod, "Warning", "Failed", "Error: ImagePullBackOff");
      return false;
    }
    return true;
  }

  /** Whether podman has the image; one found is remembered (nothing here removes images), a missing one asked again. */
  private async checkImagePresent(image: string): Promise<boolean> {
    if (this.presentImages.has(image)) return true;
    const present = await this.opts.podman!.imageExists(image);
    if (present) this.presentImages.add(image);
    return present;
  }

  private setWaiting(rt: PodRuntime, container: string, reason: string, message: string): void {
    this.mutatePod(rt, (p) => {
      const wait = (s: any) => (s.name === container ? { ...s, state: { waiting: { reason, message } } } : s);
      p.status.containerStatuses = (p.status.containerStatuses ?? []).map(wait);
      if (p.status.initContainerStatuses) p.status.initContainerStatuses = p.status.initContainerStatuses.map(wait);
    });
  }

  private async playPod(rt: PodRuntime): Promise<void> {
    const { store, events } = this.opts;
    const pod = this.current(rt);
    if (!pod) return;
    const lookup: EnvLookup = (kind, name, key) => {
      if (kind === "field") {
        const current = this.current(rt) ?? pod;
        const map: Record<string, string | undefined> = {
          "metadata.name": current.metadata.name,
          "metadata.namespace": current.metadata.namespace,
          "metadata.uid": current.metadata.uid,
          "spec.nodeName": rt.node,
          "status.podIP": current.status?.podIP,
          "status.hostIP": current.status?.hostIP,
        };
        return map[key];
      }
      const obj = store.get(kind === "secret" ? "secrets" : "configmaps", rt.namespace, name);
      const raw = obj?.data?.[key];
      if (raw === undefined) return obj?.stringData?.[key];
      return kind === "secret" ? Buffer.from(String(raw), "base64").toString() : String(raw);
    };
    const claimDirectories = await this.mountClaims(rt, pod);
    if (!this.alive(rt, "pulling")) return;
    if (!claimDirectories) {
      rt.stage = "stuck";
      return;
    }
    const plan = buildPodmanPod({
      pod,
      podmanName: rt.podmanName,
      extraLabels: { [INSTANCE_LABEL]: this.opts.instanceId, [OWNER_PID_LABEL]: String(process.pid) },
      lookup,
      claimDirectories,
      emptyDirsInMemory: this.opts.emptyDirsInMemory,
    });
    for (const w of plan.warnings) events.record(pod, "Warning", "LocalClusterUnsupported", w);
    rt.volumes = plan.volumeNames;
    rt.stage = "starting";
    rt.played = true;
    try {
      rt.playing = this.opts
        .podman!.createMemoryVolumes(plan.memoryVolumeNames)
        .then(() => this.opts.podman!.playKube(plan.yaml));
      await rt.playing;
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      if (!this.alive(rt, "starting")) return;
      rt.stage = "stuck";
      for (const c of listLongRunningContainers(pod.spec)) this.setWaiting(rt, c.name, "CreateContainerError", message);
      events.record(pod, "Warning", "Failed", `Error: ${message}`);
      return;
    }
    // A sync may have seen the container run while `kube play` was still returning (and moved the stage on).
    if (!this.alive(rt, "starting") && !this.alive(rt, "running")) return;
    this.reportCreated(rt, pod);
    this.scheduleSync(0);
  }

  /** Whether any pod's state is still read from podman (a sync applies to no other pod). */
  private hasLivePods(): boolean {
    return [...this.pods.values()].some((p) => p.stage === "starting" || p.stage === "running");
  }

  /**
   * A sync in `delayMs`, unless one is due. Events of pods being deleted or finished (died, remove) ask for one
   * too: with no pod starting or running it would read podman's state for nobody, so none is made.
   */
  private scheduleSync(delayMs: number): void {
    if (this.stopped || this.debounce || !this.hasLivePods()) return;
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      this.track(this.sync());
    }, delayMs);
  }

  /** Reads podman's state once and applies it to every started pod; concurrent calls coalesce. */
  private async sync(): Promise<void> {
    if (this.syncing) {
      this.syncAgain = true;
      return this.syncing;
    }
    this.syncing = (async () => {
      do {
        this.syncAgain = false;
        const containers = await this.opts.podman!.listContainers(this.instanceLabel);
        const byName = new Map<string, PodmanContainer>(containers.map((c) => [c.name, c]));
        for (const rt of this.pods.values()) {
          if (rt.stage === "starting" || rt.stage === "running") this.applyState(rt, byName);
        }
      } while (this.syncAgain && !this.stopped);
    })();
    try {
      await this.syncing;
    } finally {
      this.syncing = undefined;
    }
  }

  /** Records each container's Created event once, before its Started event. */
  private reportCreated(rt: PodRuntime, pod: KubeObject): void {
    if (rt.createdReported) return;
    rt.createdReported = true;
    for (const c of listLongRunningContainers(pod.spec))
      this.opts.events.record(pod, "Normal", "Created", `Created container ${c.name}`);
  }

  private applyState(rt: PodRuntime, byName: Map<string, PodmanContainer>): void {
    let phase = "";
    const pod = this.mutatePod(rt, (p) => {
      phase = applyContainerStates(
        p,
        (c) => byName.get(formatPodmanContainerName(rt.podmanName, c)),
        (c) => rt.probes.get(c),
      );
    });
    if (!pod) return;
    if ((phase === "Running" || phase === "Succeeded" || phase === "Failed") && !rt.startedReported) {
      this.reportCreated(rt, pod);
      rt.startedReported = true;
      for (const c of listLongRunningContainers(pod.spec))
        this.opts.events.record(pod, "Normal", "Started", `Started container ${c.name}`);
      this.armEviction(rt);
      this.startProber(rt, pod);
    }
    if (phase === "Running") rt.stage = "running";
    if (phase === "Succeeded" || phase === "Failed") {
      rt.stage = "finished";
      this.cancelTimers(rt);
    }
  }

  /**
   * Runs each container's readinessProbe every periodSeconds while the pod runs (a timer of the pod's, so deletion
   * stops it); a result that changed is written to the pod's status at once.
   */
  private startProber(rt: PodRuntime, pod: KubeObject): void {
    const podman = this.opts.podman;
    const probed = listLongRunningContainers(pod.spec).filter((c: any) => c.readinessProbe);
    if (rt.probing || !podman || probed.length === 0) return;
    rt.probing = true;
    const podIp = async (): Promise<string | undefined> => (rt.podIp ??= await readPodIp(podman, rt.podmanName));
    for (const c of probed) {
      const probe = c.readinessProbe as ReadinessProbe;
      const tick = async (): Promise<void> => {
        if (rt.stage !== "running" && rt.stage !== "starting") return;
        const ok = await runProbe(podman, probe, formatPodmanContainerName(rt.podmanName, c.name), podIp).catch(
          () => false,
        );
        if (rt.stage !== "running" && rt.stage !== "starting") return;
        if (rt.probes.get(c.name) !== ok) {
          rt.probes.set(c.name, ok);
          this.scheduleSync(0);
        }
        rt.timers.push(setTimeout(() => this.track(tick()), Math.max(1, probe.periodSeconds ?? 10) * 1000));
      };
      this.track(tick());
    }
  }

  private armEviction(rt: PodRuntime): void {
    const fault = this.opts.faults.take("podEviction", `${rt.namespace}/${rt.name}`);
    if (!fault) return;
    rt.timers.push(
      setTimeout(() => {
        if (rt.stage !== "running" && rt.stage !== "starting") return;
        if (fault.mode === "delete") {
          this.mutatePod(rt, (p) => {
            p.metadata.deletionTimestamp = formatTimestamp();
            p.metadata.deletionGracePeriodSeconds = 0;
          });
        } else this.track(this.evict(rt));
      }, fault.afterSeconds * 1000),
    );
  }

  private async evict(rt: PodRuntime): Promise<void> {
    const pod = this.current(rt);
    if (!pod) return;
    rt.stage = "evicted";
    const message =
      "The node was low on resource: memory. Threshold quantity: 100Mi, available: 12Mi. (local-cluster fault podEviction)";
    this.opts.events.record(pod, "Warning", "Evicted", message);
    for (const c of listLongRunningContainers(pod.spec))
      this.opts.events.record(pod, "Normal", "Killing", `Stopping container ${c.name}`);
    await this.removePodmanPod(rt, 0);
    const now = formatTimestamp();
    this.mutatePod(rt, (p) => {
      p.status.phase = "Failed";
      p.status.reason = "Evicted";
      p.status.message = message;
      p.status.conditions = setCondition(p.status.conditions, "Ready", "False", "PodFailed");
      p.status.conditions = setCondition(p.status.conditions, "ContainersReady", "False", "PodFailed");
      p.status.conditions = setCondition(
        p.status.conditions,
        "DisruptionTarget",
        "True",
        "TerminationByKubelet",
        "The node was low on resource: memory.",
      );
      p.status.containerStatuses = (p.status.containerStatuses ?? []).map((s: any) => ({
        ...s,
        ready: false,
        started: false,
        state: {
          terminated: {
            exitCode: 137,
            reason: "Error",
            message: "evicted",
            startedAt: s.state?.running?.startedAt ?? now,
            finishedAt: now,
            containerID: s.containerID,
          },
        },
      }));
    });
  }

  /** Removes the podman pod, then its emptyDir volumes. */
  private async removePodmanPod(rt: PodRuntime, graceSeconds: number): Promise<void> {
    const podman = this.opts.podman;
    if (!podman) return;
    if (rt.playing) await rt.playing.catch(() => undefined);
    await podman.removePod(rt.podmanName, graceSeconds);
    await podman.removeVolumes(rt.volumes);
  }

  /** Graceful deletion: stop the containers within the (capped) grace period, then remove the object. */
  private async terminatePod(rt: PodRuntime, graceSeconds: number): Promise<void> {
    const previous = rt.stage;
    rt.stage = "deleting";
    this.cancelTimers(rt);
    const pod = this.current(rt);
    if (rt.played && this.opts.podman) {
      if (pod && (previous === "running" || previous === "starting"))
        for (const c of listLongRunningContainers(pod.spec))
          this.opts.events.record(pod, "Normal", "Killing", `Stopping container ${c.name}`);
      try {
        await this.removePodmanPod(rt, Math.min(graceSeconds, this.opts.maxGraceSeconds));
      } catch (e) {
        console.error(
          `local-cluster kubelet: ${e instanceof Error ? e.message : String(e)} (the pod object is removed anyway)`,
        );
      }
    }
    const latest = this.current(rt);
    if (latest) this.opts.store.remove("pods", rt.namespace, rt.name);
  }
}
