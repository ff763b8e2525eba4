// Scale-from-zero nodes: none until a pod needs one, a scale-up that joins after joinSeconds, a capacity per node, and no node holdSeconds after the last demand.

import { describeSelectorMismatch, matchesNode } from "./node-match.js";
import type { Deleter } from "./deletion.js";
import type { EventRecorder } from "./events.js";
import { setCondition } from "./pod-status.js";
import { parseQuantity, sumPodRequests } from "./quantity.js";
import type { ObjectStore } from "./store.js";
import type { KubeObject, StoreEvent } from "./types.js";

/** The scale-from-zero mode as startLocalCluster takes it. */
export interface ScaleFromZeroOptions {
  /** Seconds from the scale-up (a pod that fits nowhere) until the new node is Ready. */
  joinSeconds: number;
  /** Seconds without demand after which every node goes away (counted from the node's join if later). */
  holdSeconds: number;
  /** Each node's allocatable cpu (default "2"). */
  nodeCpu?: string;
  /** Each node's allocatable memory (default "4Gi"). */
  nodeMemory?: string;
  /** Most nodes at once (default 10). */
  maxNodes?: number;
}

/** One node's life, for billing: the market rents the VM at the scale-up and stops at its removal. */
export interface NodeSpan {
  readonly name: string;
  /** Epoch ms of the scale-up that rented it. */
  readonly requestedAt: number;
  readyAt?: number;
  removedAt?: number;
}

/** Where a scheduled pod landed. */
export interface NodeBinding {
  readonly name: string;
  readonly ip: string;
}

interface Request {
  /** Millicores. */
  readonly cpu: number;
  /** Bytes. */
  readonly memory: number;
}

interface PoolNode {
  readonly name: string;
  readonly ip: string;
  readonly span: NodeSpan;
  ready: boolean;
  joinTimer?: NodeJS.Timeout;
  /** Pods bound here that are not Succeeded/Failed and not yet removed (terminating pods still hold their share). */
  readonly bound: Map<string, Request>;
}

interface Waiter {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly request: Request;
  /** Whether its nodeSelector and required node affinity let it onto a node of the pool (the autoscaler's template). */
  readonly matchesPool: boolean;
  readonly resolve: (binding: NodeBinding | undefined) => void;
  /** The joining node this pod waits for. */
  planned?: PoolNode;
  /** Why it waits, as the FailedScheduling message says; repeated every few seconds. */
  message?: string;
  /** The autoscaler's last word about it (recorded once, not on every scheduling pass). */
  autoscaler?: string;
  repeatTimer?: NodeJS.Timeout;
}

const POOL = "local-pool";
const REPEAT_MS = 5000;

/** Validates the mode's settings; throws an Error naming the bad one. */
export function checkScaleFromZero(options: ScaleFromZeroOptions): Required<ScaleFromZeroOptions> {
  const full = { nodeCpu: "2", nodeMemory: "4Gi", maxNodes: 10, ...options };
  for (const key of ["joinSeconds", "holdSeconds"] as const) {
    if (!Number.isFinite(full[key]) || full[key] < 0)
      throw new Error(`scaleFromZero.${key} must be a number of seconds >= 0, got ${String(full[key])}`);
  }
  if (!(parseQuantity(full.nodeCpu)! > 0))
    throw new Error(`scaleFromZero.nodeCpu must be a positive quantity, got ${full.nodeCpu}`);
  if (!(parseQuantity(full.nodeMemory)! > 0))
    throw new Error(`scaleFromZero.nodeMemory must be a positive quantity, got ${full.nodeMemory}`);
  if (!Number.isInteger(full.maxNodes) || full.maxNodes < 1)
    throw new Error(`scaleFromZero.maxNodes must be an integer >= 1, got ${full.maxNodes}`);
  return full;
}

/** Reads `JOIN:HOLD` (seconds), as `cluster up --scale-from-zero` takes it. */
export function parseJoinHold(text: string): { joinSeconds: number; holdSeconds: number } {
  const match = /^(\d+(?:\.\d+)?):(\d+(?:\.\d+)?)$/.exec(text);
  if (!match)
    throw new Error(`--scale-from-zero expects JOIN:HOLD in seconds, e.g. 30:120, got ${JSON.stringify(text)}`);
  return { joinSeconds: Number(match[1]), holdSeconds: Number(match[2]) };
}

/** A Ready Node object; `capacity` is absent for the static node, whose capacity is not enforced. */
export function buildNodeObject(name: string, ip: string, capacity?: { cpu: string; memory: string }): KubeObject {
  const resources = capacity
    ? { capacity: { ...capacity, pods: "110" }, allocatable: { ...capacity, pods: "110" } }
    : {};
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      uid: "",
      resourceVersion: "",
      creationTimestamp: "",
      labels: {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        ...(capacity ? { "knotless.dev/node-pool": POOL } : {}),
      },
    },
    spec: {},
    status: {
      ...resources,
      conditions: [{ type: "Ready", status: "True", reason: "KubeletReady", message: "podman is running pods" }],
      addresses: [{ type: "InternalIP", address: ip }],
      nodeInfo: {
        containerRuntimeVersion: "podman://local",
        kubeletVersion: "v1.30.0-knotless-local",
        operatingSystem: "linux",
        architecture: "amd64",
      },
    },
  };
}

function isTerminal(pod: KubeObject): boolean {
  return pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
}

/** What the tenant's scaler counts as demand: pods not Succeeded/Failed, Jobs without completionTime that are not suspended. */
export function countDemand(pods: readonly KubeObject[], jobs: readonly KubeObject[]): number {
  return (
    pods.filter((p) => !isTerminal(p)).length + jobs.filter((j) => !j.status?.completionTime && !j.spec?.suspend).length
  );
}

export interface NodePoolOptions {
  store: ObjectStore;
  events: EventRecorder;
  deleter: Deleter;
  config: ScaleFromZeroOptions;
  now?: () => number;
}

/**
 * The scheduler and autoscaler of the scale-from-zero mode. The kubelet asks `schedule` for each pod's node; the
 * pool binds it to a Ready node with room, or keeps it Pending (FailedScheduling) and rents a node for it
 * (TriggeredScaleUp) unless a joining node will have room. Node objects exist only while their node is Ready.
 */
export class NodePool {
  private readonly config: Required<ScaleFromZeroOptions>;
  private readonly capacity: Request;
  private readonly nodes = new Map<string, PoolNode>();
  private readonly spans: NodeSpan[] = [];
  private readonly waiters: Waiter[] = [];
  private readonly now: () => number;
  private unsubscribe: (() => void) | undefined;
  private scaleDownTimer: NodeJS.Timeout | undefined;
  /** Epoch ms since which there has been no demand; undefined while there is some. */
  private idleSince: number | undefined;
  private counter = 0;
  private stopped = false;

  constructor(private readonly opts: NodePoolOptions) {
    this.config = checkScaleFromZero(opts.config);
    this.capacity = {
      cpu: Math.round(parseQuantity(this.config.nodeCpu)! * 1000),
      memory: parseQuantity(this.config.nodeMemory)!,
    };
    this.now = opts.now ?? Date.now;
  }

  start(): void {
    this.unsubscribe = this.opts.store.subscribe((e) => this.onStoreEvent(e));
    this.reconsiderDemand();
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    clearTimeout(this.scaleDownTimer);
    for (const node of this.nodes.values()) clearTimeout(node.joinTimer);
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.repeatTimer);
      w.resolve(undefined);
    }
  }

  /** Every node so far, in order of scale-up, with when it was rented, Ready and removed. */
  history(): NodeSpan[] {
    return this.spans.map((s) => ({ ...s }));
  }

  /** Resolves with the node the pod is bound to once one has room; undefined when the pod went away first. */
  schedule(pod: KubeObject): Promise<NodeBinding | undefined> {
    if (this.stopped) return Promise.resolve(undefined);
    const requests = sumPodRequests(pod.spec);
    return new Promise((resolve) => {
      this.waiters.push({
        uid: pod.metadata.uid,
        namespace: pod.metadata.namespace ?? "default",
        name: pod.metadata.name,
        request: { cpu: Math.round(requests.cpu * 1000), memory: requests.memory },
        matchesPool: matchesNode(
          pod,
          buildNodeObject(`${POOL}-template`, "", { cpu: this.config.nodeCpu, memory: this.config.nodeMemory }).metadata
            .labels ?? {},
        ),
        resolve,
      });
      this.place();
    });
  }

  private free(node: PoolNode, planned: Iterable<Waiter> = []): Request {
    let cpu = this.capacity.cpu;
    let memory = this.capacity.memory;
    for (const r of node.bound.values()) {
      cpu -= r.cpu;
      memory -= r.memory;
    }
    for (const w of planned) {
      cpu -= w.request.cpu;
      memory -= w.request.memory;
    }
    return { cpu, memory };
  }

  private fits(request: Request, free: Request): boolean {
    return request.cpu <= free.cpu && request.memory <= free.memory;
  }

  /** Binds every waiting pod that fits somewhere, in arrival order; plans or rents nodes for the others. */
  private place(): void {
    if (this.stopped) return;
    for (const w of [...this.waiters]) {
      const ready = [...this.nodes.values()].filter((n) => n.ready);
      if (!w.matchesPool) {
        // No node of the pool, there or to come, has the labels it asks for: the autoscaler says so once.
        this.report(w, describeSelectorMismatch(ready.length), {
          reason: "NotTriggerScaleUp",
          message: "pod didn't trigger scale-up: 1 node(s) didn't match Pod's node affinity/selector",
        });
        continue;
      }
      const target = ready.find((n) => this.fits(w.request, this.free(n)));
      if (target) {
        this.bind(w, target);
        continue;
      }
      if (w.planned && !w.planned.ready && this.nodes.has(w.planned.name)) continue; // its node is still joining
      w.planned = undefined;
      const joining = [...this.nodes.values()].filter((n) => !n.ready);
      const room = joining.find((n) =>
        this.fits(
          w.request,
          this.free(
            n,
            this.waiters.filter((o) => o.planned === n),
          ),
        ),
      );
      const insufficient = this.describeShortage(w.request, ready);
      if (room) {
        w.planned = room;
        this.report(w, insufficient);
      } else if (!this.fits(w.request, this.capacity)) {
        this.report(w, insufficient, {
          reason: "NotTriggerScaleUp",
          message: `pod didn't trigger scale-up: it would not fit on a new node (${this.config.nodeCpu} cpu, ${this.config.nodeMemory} memory)`,
        });
      } else if (this.nodes.size >= this.config.maxNodes) {
        this.report(w, insufficient, {
          reason: "NotTriggerScaleUp",
          message: "pod didn't trigger scale-up: 1 max node group size reached",
        });
      } else {
        const before = this.nodes.size;
        w.planned = this.rentNode();
        this.report(w, insufficient, {
          reason: "TriggeredScaleUp",
          message: `pod triggered scale-up: [{${POOL} ${before}->${before + 1} (max: ${this.config.maxNodes})}]`,
          normal: true,
        });
      }
    }
  }

  /** The scheduler's FailedScheduling message for a pod that fits on none of `nodes` (undefined: an empty new node). */
  private describeShortage(request: Request, nodes: ReadonlyArray<PoolNode | undefined>): string {
    if (nodes.length === 0) return "0/0 nodes are available: no nodes available to schedule pods.";
    let cpu = 0;
    let memory = 0;
    for (const n of nodes) {
      const free = n ? this.free(n) : this.capacity;
      if (request.cpu > free.cpu) cpu++;
      if (request.memory > free.memory) memory++;
    }
    const parts = [cpu ? `${cpu} Insufficient cpu` : "", memory ? `${memory} Insufficient memory` : ""]
      .filter(Boolean)
      .join(", ");
    return `0/${nodes.length} nodes are available: ${parts}.`;
  }

  /** Marks the pod Unschedulable with a FailedScheduling event (repeated while it waits) and, once, the autoscaler's word. */
  private report(w: Waiter, message: string, autoscaler?: { reason: string; message: string; normal?: boolean }): void {
    const pod = this.opts.store.mutate("pods", w.namespace, w.name, (p) => {
      p.status ??= {};
      p.status.conditions = setCondition(p.status.conditions, "PodScheduled", "False", "Unschedulable", message);
    });
    if (!pod || pod.metadata.uid !== w.uid) return;
    if (w.message !== message) {
      w.message = message;
      this.opts.events.record(pod, "Warning", "FailedScheduling", message, "default-scheduler");
    }
    if (autoscaler && w.autoscaler !== autoscaler.message) {
      w.autoscaler = autoscaler.message;
      this.opts.events.record(
        pod,
        autoscaler.normal ? "Normal" : "Warning",
        autoscaler.reason,
        autoscaler.message,
        "cluster-autoscaler",
      );
    }
    if (!w.repeatTimer) {
      const repeat = (): void => {
        const current = this.opts.store.get("pods", w.namespace, w.name);
        if (this.stopped || !this.waiters.includes(w) || !current || current.metadata.uid !== w.uid) return;
        this.opts.events.record(current, "Warning", "FailedScheduling", w.message ?? message, "default-scheduler");
        w.repeatTimer = setTimeout(repeat, REPEAT_MS);
      };
      w.repeatTimer = setTimeout(repeat, REPEAT_MS);
    }
  }

  private bind(w: Waiter, node: PoolNode): void {
    this.removeWaiter(w);
    node.bound.set(w.uid, w.request);
    w.resolve({ name: node.name, ip: node.ip });
  }

  private removeWaiter(w: Waiter): void {
    const at = this.waiters.indexOf(w);
    if (at >= 0) this.waiters.splice(at, 1);
    clearTimeout(w.repeatTimer);
  }

  /** Starts renting a node: it joins (Node object, Ready) after joinSeconds. */
  private rentNode(): PoolNode {
    this.counter += 1;
    const name = `local-node-${this.counter}`;
    const span: NodeSpan = { name, requestedAt: this.now() };
    const node: PoolNode = { name, ip: `10.0.0.${(this.counter % 250) + 1}`, span, ready: false, bound: new Map() };
    this.nodes.set(name, node);
    this.spans.push(span);
    node.joinTimer = setTimeout(() => this.join(node), this.config.joinSeconds * 1000);
    return node;
  }

  private join(node: PoolNode): void {
    if (this.stopped || !this.nodes.has(node.name)) return;
    node.ready = true;
    node.span.readyAt = this.now();
    this.opts.store.create(
      "nodes",
      buildNodeObject(node.name, node.ip, { cpu: this.config.nodeCpu, memory: this.config.nodeMemory }),
    );
    this.place();
    this.armScaleDown();
  }

  private onStoreEvent(e: StoreEvent): void {
    if (this.stopped || (e.resource !== "pods" && e.resource !== "jobs.batch")) return;
    if (e.resource === "pods") {
      const uid = e.object.metadata.uid;
      if (e.type === "DELETED" || isTerminal(e.object)) {
        let freed = false;
        for (const node of this.nodes.values()) freed = node.bound.delete(uid) || freed;
        const waiter = this.waiters.find((w) => w.uid === uid);
        if (waiter && e.type === "DELETED") {
          this.removeWaiter(waiter);
          waiter.resolve(undefined);
          freed = true;
        }
        if (freed) queueMicrotask(() => this.place());
      }
    }
    this.reconsiderDemand();
  }

  private reconsiderDemand(): void {
    const demand = countDemand(this.opts.store.list("pods"), this.opts.store.list("jobs.batch"));
    if (demand > 0) {
      this.idleSince = undefined;
      clearTimeout(this.scaleDownTimer);
      this.scaleDownTimer = undefined;
      return;
    }
    if (this.idleSince === undefined) {
      this.idleSince = this.now();
      this.armScaleDown();
    }
  }

  /** When a Ready node is due to go: holdSeconds after the last demand, or after its own join if that came later. */
  private dueAt(node: PoolNode): number {
    return Math.max(this.idleSince ?? Infinity, node.span.readyAt ?? Infinity) + this.config.holdSeconds * 1000;
  }

  private armScaleDown(): void {
    clearTimeout(this.scaleDownTimer);
    this.scaleDownTimer = undefined;
    if (this.idleSince === undefined || this.stopped) return;
    const due = [...this.nodes.values()].filter((n) => n.ready).map((n) => this.dueAt(n));
    if (due.length === 0) return;
    this.scaleDownTimer = setTimeout(() => this.scaleDown(), Math.max(0, Math.min(...due) - this.now()));
  }

  private scaleDown(): void {
    if (this.idleSince === undefined || this.stopped) return;
    const now = this.now();
    for (const node of [...this.nodes.values()]) if (node.ready && this.dueAt(node) <= now) this.removeNode(node);
    this.armScaleDown();
  }

  /** The node leaves the cluster; pods still bound to it (finished ones) go with it, as the pod garbage collector does. */
  private removeNode(node: PoolNode): void {
    this.nodes.delete(node.name);
    node.span.removedAt = this.now();
    this.opts.store.remove("nodes", undefined, node.name);
    for (const pod of this.opts.store.list("pods")) {
      if (pod.spec?.nodeName !== node.name) continue;
      try {
        this.opts.deleter.delete({
          storeKey: "pods",
          namespace: pod.metadata.namespace,
          name: pod.metadata.name,
          gracePeriodSeconds: 0,
        });
      } catch {
        // gone already
      }
    }
  }
}
