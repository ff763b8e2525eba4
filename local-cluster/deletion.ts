// Deleting objects: graceful pod deletion, and owner deletion with Background, Foreground or Orphan propagation.

import type { ObjectStore } from "./store.js";
import { formatTimestamp } from "./time.js";
import type { KubeObject } from "./types.js";

export type PropagationPolicy = "Background" | "Foreground" | "Orphan";

export interface DeleteRequest {
  storeKey: string;
  namespace: string | undefined;
  name: string;
  propagationPolicy?: PropagationPolicy;
  gracePeriodSeconds?: number;
}

/** The kinds whose objects the garbage collector removes with their owner (the run's PodDisruptionBudget goes with its Job). */
const DEPENDENT_KINDS = ["pods", "jobs.batch", "poddisruptionbudgets.policy"];

/** The policy a delete without one gets: batch/v1 Jobs still default to orphaning their pods, like the real API. */
export function defaultPropagationPolicy(storeKey: string): PropagationPolicy {
  return storeKey === "jobs.batch" ? "Orphan" : "Background";
}

export class Deleter {
  constructor(private readonly store: ObjectStore) {}

  private dependentsOf(owner: KubeObject): { storeKey: string; object: KubeObject }[] {
    const out: { storeKey: string; object: KubeObject }[] = [];
    for (const storeKey of DEPENDENT_KINDS) {
      for (const o of this.store.list(storeKey, owner.metadata.namespace)) {
        if ((o.metadata.ownerReferences ?? []).some((r) => r.uid === owner.metadata.uid))
          out.push({ storeKey, object: o });
      }
    }
    return out;
  }

  /** Deletes one object; returns the object as it was (with deletionTimestamp when the deletion is still in progress). */
  delete(req: DeleteRequest): KubeObject {
    const obj = this.store.mustGet(req.storeKey, req.namespace, req.name);
    const policy = req.propagationPolicy ?? defaultPropagationPolicy(req.storeKey);
    const dependents = this.dependentsOf(obj);

    if (policy === "Orphan") {
      for (const d of dependents) {
        this.store.mutate(d.storeKey, d.object.metadata.namespace, d.object.metadata.name, (o) => {
          o.metadata.ownerReferences = (o.metadata.ownerReferences ?? []).filter((r) => r.uid !== obj.metadata.uid);
          if (o.metadata.ownerReferences.length === 0) delete o.metadata.ownerReferences;
        });
      }
    }
    if (policy === "Foreground" && dependents.length > 0) {
      const marked = this.store.mutate(req.storeKey, req.namespace, req.name, (o) => {
        o.metadata.deletionTimestamp ??= formatTimestamp();
        o.metadata.deletionGracePeriodSeconds = 0;
        o.metadata.finalizers = [...new Set([...(o.metadata.finalizers ?? []), "foregroundDeletion"])];
      });
      for (const d of dependents) this.deleteDependent(d.storeKey, d.object);
      this.finishForegroundWhenEmpty(marked ?? obj);
      return marked ?? obj;
    }
    if (req.storeKey === "persistentvolumeclaims" && (obj.metadata.finalizers ?? []).length > 0)
      return this.markDeleted(req.storeKey, obj);
    const removed =
      req.storeKey === "pods"
        ? this.deletePod(obj, req.gracePeriodSeconds)
        : (this.store.remove(req.storeKey, req.namespace, req.name) ?? obj);
    if (policy === "Background") for (const d of dependents) this.deleteDependent(d.storeKey, d.object);
    return removed;
  }

  /** An object with finalizers stays, Terminating, until whoever owns them drops them (local-cluster/claims.ts for claims). */
  private markDeleted(storeKey: string, obj: KubeObject): KubeObject {
    if (obj.metadata.deletionTimestamp) return obj;
    return (
      this.store.mutate(storeKey, obj.metadata.namespace, obj.metadata.name, (o) => {
        o.metadata.deletionTimestamp = formatTimestamp();
        o.metadata.deletionGracePeriodSeconds = 0;
      }) ?? obj
    );
  }

  private deleteDependent(storeKey: string, o: KubeObject): void {
    try {
      this.delete({
        storeKey,
        namespace: o.metadata.namespace,
        name: o.metadata.name,
        propagationPolicy: "Background",
      });
    } catch {
      // already gone: nothing to do
    }
  }

  /** A pod that never got a node goes at once; otherwise it is marked, and the kubelet removes it after stopping it. */
  private deletePod(pod: KubeObject, gracePeriodSeconds: number | undefined): KubeObject {
    if (pod.metadata.deletionTimestamp) return pod;
    if (!pod.spec?.nodeName) return this.store.remove("pods", pod.metadata.namespace, pod.metadata.name) ?? pod;
    const grace = gracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
    return (
      this.store.mutate("pods", pod.metadata.namespace, pod.metadata.name, (o) => {
        o.metadata.deletionTimestamp = formatTimestamp(new Date(Date.now() + grace * 1000));
        o.metadata.deletionGracePeriodSeconds = grace;
      }) ?? pod
    );
  }

  private finishForegroundWhenEmpty(owner: KubeObject): void {
    const check = (): boolean => {
      const current = this.store.get(this.ownerKey(owner), owner.metadata.namespace, owner.metadata.name);
      if (!current || current.metadata.uid !== owner.metadata.uid) return true;
      if (this.dependentsOf(current).length > 0) return false;
      this.store.remove(this.ownerKey(owner), owner.metadata.namespace, owner.metadata.name);
      return true;
    };
    if (check()) return;
    const unsubscribe = this.store.subscribe((e) => {
      if (e.type === "DELETED" && check()) unsubscribe();
    });
  }

  private ownerKey(owner: KubeObject): string {
    return owner.kind === "Job" ? "jobs.batch" : "pods";
  }
}
