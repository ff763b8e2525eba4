// Leases and Jobs kept in memory with the API server's resourceVersion rules, behind a ScriptedCluster: a 409 when a write carries a stale version.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { ILease } from "kubernetes-models/coordination.k8s.io/v1/Lease";
import { AlreadyExistsError, ConflictError, NotFoundError } from "../../src/cluster/errors.js";
import { ScriptedCluster } from "./scripted-cluster.js";

/** A ScriptedCluster whose Lease and Job calls read and write `leases` and `jobs`, as an API server would. */
export class MemoryObjects {
  readonly leases = new Map<string, ILease>();
  readonly jobs = new Map<string, IJob>();
  readonly cluster = new ScriptedCluster();
  #version = 100;

  constructor() {
    const c = this.cluster;
    c.on(
      "getLease",
      (_ns: unknown, name: string) =>
        this.#copy(this.leases.get(name)) ?? new NotFoundError(`leases "${name}" not found`),
    );
    c.on("listLeases", () => [...this.leases.values()].map((lease) => this.#copy(lease)));
    c.on("createLease", (_ns: unknown, lease: ILease) => {
      const name = lease.metadata!.name!;
      if (this.leases.has(name)) return new AlreadyExistsError(`leases "${name}" already exists`);
      return this.#store(this.leases, name, lease);
    });
    c.on("updateLease", (_ns: unknown, lease: ILease) => {
      const name = lease.metadata!.name!;
      const current = this.leases.get(name);
      if (!current) return new NotFoundError(`leases "${name}" not found`);
      if (lease.metadata?.resourceVersion !== current.metadata?.resourceVersion)
        return new ConflictError(`Operation cannot be fulfilled on leases "${name}": the object has been modified`);
      return this.#store(this.leases, name, lease);
    });
    c.on("deleteLease", (_ns: unknown, name: string, options?: { resourceVersion?: string }) => {
      const current = this.leases.get(name);
      if (!current) return "absent";
      if (options?.resourceVersion !== undefined && options.resourceVersion !== current.metadata?.resourceVersion)
        return new ConflictError(`Precondition failed on leases "${name}"`);
      this.leases.delete(name);
      return "deleted";
    });
    c.on(
      "getJob",
      (_ns: unknown, name: string) =>
        this.#copy(this.jobs.get(name)) ?? new NotFoundError(`jobs.batch "${name}" not found`),
    );
    c.on("listJobs", () => [...this.jobs.values()].map((job) => this.#copy(job)));
    c.on("claimJob", (_ns: unknown, name: string, version: string, annotations: Record<string, string>) => {
      const current = this.jobs.get(name);
      if (!current) return new NotFoundError(`jobs.batch "${name}" not found`);
      if (version !== current.metadata?.resourceVersion)
        return new ConflictError(`Operation cannot be fulfilled on jobs.batch "${name}": the object has been modified`);
      return this.#store(this.jobs, name, {
        ...current,
        metadata: { ...current.metadata, annotations: { ...current.metadata?.annotations, ...annotations } },
      });
    });
    c.on("patchJobAnnotations", (_ns: unknown, name: string, annotations: Record<string, string>) => {
      const current = this.jobs.get(name);
      if (!current) return new NotFoundError(`jobs.batch "${name}" not found`);
      this.#store(this.jobs, name, {
        ...current,
        metadata: { ...current.metadata, annotations: { ...current.metadata?.annotations, ...annotations } },
      });
      return undefined;
    });
  }

  /** Puts a Job in, at a fresh resourceVersion. */
  addJob(job: IJob): IJob {
    return this.#store(this.jobs, job.metadata!.name!, job);
  }

  /** Changes a stored object as another writer would (a new resourceVersion). */
  touchLease(name: string, change: (lease: ILease) => ILease): void {
    this.#store(this.leases, name, change(this.leases.get(name)!));
  }

  #store<T extends { metadata?: { resourceVersion?: string } }>(map: Map<string, T>, name: string, object: T): T {
    const stored = { ...object, metadata: { ...object.metadata, resourceVersion: String(++this.#version) } } as T;
    map.set(name, stored);
    return this.#copy(stored)!;
  }

  #copy<T>(object: T | undefined): T | undefined {
    return object === undefined ? undefined : (JSON.parse(JSON.stringify(object)) as T);
  }
}
