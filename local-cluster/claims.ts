// PersistentVolumeClaims on one machine: a host directory per claim, made on first use, removed with the claim; a claim a pod still uses stays Terminating until none does (kube-controller-manager's pvc-protection).

import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { ObjectStore } from "./store.js";
import type { KubeObject, StoreEvent } from "./types.js";

export const CLAIMS_STORE_KEY = "persistentvolumeclaims";
/** The finalizer every claim gets at creation, as on a real cluster: a delete then waits until no pod uses the claim. */
export const PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection";

/** The claim names a pod's volumes refer to, in order. */
export function listPodClaimNames(pod: KubeObject): string[] {
  return (pod.spec?.volumes ?? [])
    .map((v: any) => v?.persistentVolumeClaim?.claimName)
    .filter((n: unknown): n is string => typeof n === "string" && n.length > 0);
}

function isTerminal(pod: KubeObject): boolean {
  return pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
}

export class ClaimStorage {
  private unsubscribe: (() => void) | undefined;
  private readonly pending = new Set<Promise<unknown>>();

  /** `root`: where the claims' directories go, `<root>/<namespace>/<name>-<uid>`, so a claim made again starts empty. */
  constructor(
    private readonly store: ObjectStore,
    readonly root: string,
  ) {}

  start(): void {
    this.unsubscribe = this.store.subscribe((e) => this.onStoreEvent(e));
  }

  /** Stops following the store and removes every claim's directory (the claims die with the cluster, as its objects do). */
  async stop(): Promise<void> {
    this.unsubscribe?.();
    await Promise.allSettled([...this.pending]);
    await rm(this.root, { recursive: true, force: true });
  }

  /** The host directory of a claim (not made yet: see ensureDirectory). */
  directoryOf(claim: KubeObject): string {
    return join(this.root, claim.metadata.namespace ?? "default", `${claim.metadata.name}-${claim.metadata.uid}`);
  }

  /** Makes the claim's directory on first use and returns it. */
  async ensureDirectory(claim: KubeObject): Promise<string> {
    const dir = this.directoryOf(claim);
    await mkdir(dir, { recursive: true, mode: 0o777 });
    return dir;
  }

  /**
   * Why the scheduler cannot place the pod because of its claims, in the VolumeBinding plugin's words
   * (`persistentvolumeclaim "x" not found`, `... is being deleted`), or undefined when every claim is there.
   */
  describeUnusableClaim(pod: KubeObject): string | undefined {
    const namespace = pod.metadata.namespace ?? "default";
    for (const name of listPodClaimNames(pod)) {
      const claim = this.store.get(CLAIMS_STORE_KEY, namespace, name);
      if (!claim) return `persistentvolumeclaim "${name}" not found`;
      if (claim.metadata.deletionTimestamp) return `persistentvolumeclaim "${name}" is being deleted`;
    }
    return undefined;
  }

  private onStoreEvent(e: StoreEvent): void {
    if (e.resource === CLAIMS_STORE_KEY) {
      if (e.type === "DELETED") this.track(rm(this.directoryOf(e.object), { recursive: true, force: true }));
      else if (e.object.metadata.deletionTimestamp) this.finishIfUnused(e.object);
      return;
    }
    if (e.resource !== "pods") return;
    if (e.type === "DELETED" || isTerminal(e.object)) {
      const namespace = e.object.metadata.namespace ?? "default";
      for (const name of listPodClaimNames(e.object)) {
        const claim = this.store.get(CLAIMS_STORE_KEY, namespace, name);
        if (claim?.metadata.deletionTimestamp) this.finishIfUnused(claim);
      }
    }
  }

  /** A Terminating claim goes once no pod that has not finished uses it: its finalizer is dropped, then the object. */
  private finishIfUnused(claim: KubeObject): void {
    const namespace = claim.metadata.namespace ?? "default";
    // Only pods bound to a node count, as in the real controller: a kubelet never starts one whose claim is being deleted.
    const inUse = this.store
      .list("pods", namespace)
      .some((pod) => !!pod.spec?.nodeName && !isTerminal(pod) && listPodClaimNames(pod).includes(claim.metadata.name));
    if (inUse) return;
    const rest = (claim.metadata.finalizers ?? []).filter((f) => f !== PVC_PROTECTION_FINALIZER);
    if (rest.length > 0) {
      if (rest.length !== (claim.metadata.finalizers ?? []).length)
        this.store.mutate(CLAIMS_STORE_KEY, namespace, claim.metadata.name, (o) => {
          o.metadata.finalizers = rest;
        });
      return;
    }
    this.store.remove(CLAIMS_STORE_KEY, namespace, claim.metadata.name);
  }

  private track(p: Promise<unknown>): void {
    this.pending.add(p);
    p.catch((e) => console.error(`local-cluster claims: ${e instanceof Error ? e.message : String(e)}`)).finally(() =>
      this.pending.delete(p),
    );
  }
}
