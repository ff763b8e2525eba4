// Shapes of the Kubernetes objects the local cluster stores: loose on purpose, validated where they enter.

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  generateName?: string;
  uid: string;
  resourceVersion: string;
  generation?: number;
  creationTimestamp: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  [key: string]: unknown;
}

/** Any stored object: apiVersion, kind and metadata are always set; the rest is free-form JSON. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: any;
  status?: any;
  [key: string]: any;
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED";

/** One change in the store; `previous` is the object before a MODIFIED (for selector transitions). */
export interface StoreEvent {
  type: WatchEventType;
  resource: string;
  object: KubeObject;
  previous?: KubeObject;
  resourceVersion: number;
}
