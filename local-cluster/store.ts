// The in-memory object store: increasing resourceVersions, uids, and a bounded change history for watches.

import { randomUUID } from "node:crypto";
import { alreadyExists, conflict, notFound } from "./api-error.js";
import type { KubeObject, StoreEvent } from "./types.js";

export type StoreListener = (event: StoreEvent) => void;

/** How a store key maps onto names in messages: `jobs.batch` -> resource `jobs`, group `batch`. */
function splitStoreKey(key: string): { resource: string; group: string } {
  const dot = key.indexOf(".");
  return dot < 0 ? { resource: key, group: "" } : { resource: key.slice(0, dot), group: key.slice(dot + 1) };
}

function objectKey(namespace: string | undefined, name: string): string {
  return `${namespace ?? ""}/${name}`;
}

export class ObjectStore {
  private revision = 0;
  private readonly objects = new Map<string, Map<string, KubeObject>>();
  private readonly history: StoreEvent[] = [];
  private readonly listeners = new Set<StoreListener>();

  constructor(private readonly historyLimit = 5000) {}

  currentResourceVersion(): number {
    return this.revision;
  }

  private bucket(resource: string): Map<string, KubeObject> {
    let b = this.objects.get(resource);
    if (!b) {
      b = new Map();
      this.objects.set(resource, b);
    }
    return b;
  }

  private readonly outbox: StoreEvent[] = [];
  private delivering = false;

  /**
   * Records a change and delivers it to every listener in order. A listener that changes the store while being told
   * about a change does not get ahead of the others: the new change waits until the current one reached everyone.
   */
  private emit(event: StoreEvent): void {
    this.history.push(event);
    if (this.history.length > this.historyLimit) this.history.splice(0, this.history.length - this.historyLimit);
    this.outbox.push(event);
    if (this.delivering) return;
    this.delivering = true;
    try {
      for (let next = this.outbox.shift(); next; next = this.outbox.shift()) {
        for (const l of [...this.listeners]) {
          try {
            l(next);
          } catch (e) {
            console.error(`local-cluster store listener: ${e instanceof Error ? e.stack : String(e)}`);
          }
        }
      }
    } finally {
      this.delivering = false;
    }
  }

  get(resource: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const o = this.bucket(resource).get(objectKey(namespace, name));
    return o ? structuredClone(o) : undefined;
  }

  mustGet(resource: string, namespace: string | undefined, name: string): KubeObject {
    const o = this.get(resource, namespace, name);
    if (!o) {
      const { resource: r, group } = splitStoreKey(resource);
      throw notFound(r, group, name);
    }
    return o;
  }

  list(resource: string, namespace?: string): KubeObject[] {
    const out: KubeObject[] = [];
    for (const o of this.bucket(resource).values()) {
      if (namespace === undefined || o.metadata.namespace === namespace) out.push(structuredClone(o));
    }
    return out.sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion));
  }

  /** Stores a new object; fills uid, resourceVersion and creationTimestamp; fails with AlreadyExists. */
  create(resource: string, input: KubeObject): KubeObject {
    const b = this.bucket(resource);
    const key = objectKey(input.metadata.namespace, input.metadata.name);
    if (b.has(key)) {
      const { resource: r, group } = splitStoreKey(resource);
      throw alreadyExists(r, group, input.metadata.name);
    }
    const obj = structuredClone(input);
    this.revision++;
    obj.metadata.uid = obj.metadata.uid || randomUUID();
    obj.metadata.resourceVersion = String(this.revision);
    obj.metadata.creationTimestamp = obj.metadata.creationTimestamp || new Date().toISOString().replace(/\.\d+Z$/, "Z");
    b.set(key, obj);
    this.emit({ type: "ADDED", resource, object: structuredClone(obj), resourceVersion: this.revision });
    return structuredClone(obj);
  }

  /** Replaces an object; when `expectedResourceVersion` is given and stale, fails with Conflict. */
  update(resource: string, input: KubeObject, expectedResourceVersion?: string): KubeObject {
    const b = this.bucket(resource);
    const key = objectKey(input.metadata.namespace, input.metadata.name);
    const previous = b.get(key);
    const { resource: r, group } = splitStoreKey(resource);
    if (!previous) throw notFound(r, group, input.metadata.name);
    if (expectedResourceVersion && expectedResourceVersion !== previous.metadata.resourceVersion) {
      throw conflict(
        r,
        group,
        input.metadata.name,
        "the object has been modified; please apply your changes to the latest version and try again",
      );
    }
    const obj = structuredClone(input);
    this.revision++;
    obj.metadata.uid = previous.metadata.uid;
    obj.metadata.creationTimestamp = previous.metadata.creationTimestamp;
    obj.metadata.resourceVersion = String(this.revision);
    b.set(key, obj);
    this.emit({
      type: "MODIFIED",
      resource,
      object: structuredClone(obj),
      previous: structuredClone(previous),
      resourceVersion: this.revision,
    });
    return structuredClone(obj);
  }

  /** Applies `change` to a copy of the current object and stores it; returns undefined when the object is gone. */
  mutate(
    resource: string,
    namespace: string | undefined,
    name: string,
    change: (obj: KubeObject) => void,
  ): KubeObject | undefined {
    const current = this.get(resource, namespace, name);
    if (!current) return undefined;
    const before = JSON.stringify(current);
    change(current);
    if (JSON.stringify(current) === before) return current;
    return this.update(resource, current);
  }

  /** Removes an object for good; returns it, or undefined when it was already gone. */
  remove(resource: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const b = this.bucket(resource);
    const key = objectKey(namespace, name);
    const previous = b.get(key);
    if (!previous) return undefined;
    b.delete(key);
    this.revision++;
    const obj = structuredClone(previous);
    obj.metadata.resourceVersion = String(this.revision);
    this.emit({ type: "DELETED", resource, object: obj, resourceVersion: this.revision });
    return structuredClone(obj);
  }

  /** Changes after `resourceVersion`, or "expired" when the history no longer reaches back that far. */
  eventsSince(resource: string, resourceVersion: number): StoreEvent[] | "expired" {
    const oldest = this.history[0];
    if (oldest && oldest.resourceVersion > resourceVersion + 1 && this.history.length >= this.historyLimit)
      return "expired";
    return this.history.filter((e) => e.resource === resource && e.resourceVersion > resourceVersion);
  }

  /**
   * Every change still in the history (at most the last `historyLimit`), oldest first, each with the object as it
   * was stored (deleted objects included), and whether the history still reaches back to the store's first change.
   */
  changes(): { events: StoreEvent[]; complete: boolean } {
    const complete = this.revision === 0 || this.history[0]?.resourceVersion === 1;
    return { events: structuredClone(this.history), complete };
  }

  subscribe(listener: StoreListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Every object of every resource (for state dumps and clean-up). */
  listAll(): { resource: string; object: KubeObject }[] {
    const out: { resource: string; object: KubeObject }[] = [];
    for (const [resource, b] of this.objects)
      for (const o of b.values()) out.push({ resource, object: structuredClone(o) });
    return out;
  }
}
