// The Job controller: creates each Job's pod from its template, follows the pod into Job status, deadlines and TTL.

import { checkPodSecurity } from "./pod-security.js";
import { generateSuffix } from "./admission.js";
import type { Deleter } from "./deletion.js";
import type { EventRecorder } from "./events.js";
import { setCondition } from "./pod-status.js";
import type { ObjectStore } from "./store.js";
import { formatTimestamp } from "./time.js";
import type { KubeObject, StoreEvent } from "./types.js";

interface JobRuntime {
  uid: string;
  namespace: string;
  name: string;
  succeeded: Set<string>;
  failed: Set<string>;
  deadlineTimer?: NodeJS.Timeout;
  ttlTimer?: NodeJS.Timeout;
  retryTimer?: NodeJS.Timeout;
  finished: boolean;
}

export interface JobControllerOptions {
  store: ObjectStore;
  events: EventRecorder;
  deleter: Deleter;
  /** Delay before replacing a failed pod (the real controller backs off from 10 s; default 1 s). */
  retryDelayMs?: number;
}

export class JobController {
  private readonly jobs = new Map<string, JobRuntime>();
  private unsubscribe: (() => void) | undefined;
  private readonly retryDelayMs: number;

  constructor(private readonly opts: JobControllerOptions) {
    this.retryDelayMs = opts.retryDelayMs ?? 1000;
  }

  start(): void {
    this.unsubscribe = this.opts.store.subscribe((e) => this.onEvent(e));
  }

  stop(): void {
    this.unsubscribe?.();
    for (const j of this.jobs.values()) this.clearTimers(j);
  }

  private clearTimers(j: JobRuntime): void {
    clearTimeout(j.deadlineTimer);
    clearTimeout(j.ttlTimer);
    clearTimeout(j.retryTimer);
  }

  private onEvent(e: StoreEvent): void {
    if (e.resource === "jobs.batch") {
      if (e.type === "ADDED") queueMicrotask(() => this.startJob(e.object));
      if (e.type === "DELETED") {
        const j = this.jobs.get(e.object.metadata.uid);
        if (j) this.clearTimers(j);
        this.jobs.delete(e.object.metadata.uid);
      }
      return;
    }
    if (e.resource !== "pods") return;
    const owner = (e.object.metadata.ownerReferences ?? []).find((r) => r.kind === "Job" && r.controller);
    const j = owner ? this.jobs.get(owner.uid) : undefined;
    if (!j) return;
    const phase = e.object.status?.phase;
    const uid = e.object.metadata.uid;
    if (phase === "Succeeded") j.succeeded.add(uid);
    else if (
      (phase === "Failed" || e.type === "DELETED" || e.object.metadata.deletionTimestamp) &&
      !j.succeeded.has(uid)
    )
      j.failed.add(uid);
    queueMicrotask(() => this.reconcile(j));
  }

  private current(j: JobRuntime): KubeObject | undefined {
    const job = this.opts.store.get("jobs.batch", j.namespace, j.name);
    return job && job.metadata.uid === j.uid ? job : undefined;
  }

  private startJob(job: KubeObject): void {
    const j: JobRuntime = {
      uid: job.metadata.uid,
      namespace: job.metadata.namespace ?? "default",
      name: job.metadata.name,
      succeeded: new Set(),
      failed: new Set(),
      finished: false,
    };
    this.jobs.set(j.uid, j);
    if (job.spec?.suspend) {
      this.opts.store.mutate("jobs.batch", j.namespace, j.name, (o) => {
        o.status.conditions = setCondition(o.status.conditions, "Suspended", "True", "JobSuspended", "Job suspended");
      });
      return;
    }
    this.opts.store.mutate("jobs.batch", j.namespace, j.name, (o) => {
      o.status = {
        ...(o.status ?? {}),
        startTime: formatTimestamp(),
        active: 0,
        ready: 0,
        terminating: 0,
        uncountedTerminatedPods: {},
      };
    });
    const deadline = job.spec?.activeDeadlineSeconds;
    if (typeof deadline === "number")
      j.deadlineTimer = setTimeout(
        () => this.failJob(j, "DeadlineExceeded", "Job was active longer than specified deadline"),
        deadline * 1000,
      );
    this.createPod(j);
  }

  private podsOf(j: JobRuntime): KubeObject[] {
    return this.opts.store
      .list("pods", j.namespace)
      .filter((p) => (p.metadata.ownerReferences ?? []).some((r) => r.uid === j.uid));
  }

  private createPod(j: JobRuntime): void {
    const job = this.current(j);
    if (!job || j.finished || job.metadata.deletionTimestamp) return;
    const template = job.spec.template ?? {};
    const name = `${j.name}-${generateSuffix()}`;
    const pod: KubeObject = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name,
        generateName: `${j.name}-`,
        namespace: j.namespace,
        uid: "",
        resourceVersion: "",
        creationTimestamp: "",
        labels: { ...(template.metadata?.labels ?? {}) },
        annotations: { ...(template.metadata?.annotations ?? {}) },
        ownerReferences: [
          { apiVersion: "batch/v1", kind: "Job", name: j.name, uid: j.uid, controller: true, blockOwnerDeletion: true },
        ],
        finalizers: ["batch.kubernetes.io/job-tracking"],
      },
      spec: structuredClone(template.spec),
      status: { phase: "Pending", qosClass: "BestEffort" },
    };
    // Pod Security admission refuses the controller's create as it would anyone's: the Job stays, podless, with FailedCreate events.
    const refusal = checkPodSecurity(this.opts.store.get("namespaces", undefined, j.namespace), name, pod.spec);
    if (refusal) {
      this.opts.events.record(job, "Warning", "FailedCreate", `Error creating: ${refusal}`, "job-controller");
      clearTimeout(j.retryTimer);
      j.retryTimer = setTimeout(() => {
        j.retryTimer = undefined;
        this.createPod(j);
      }, 10_000);
      return;
    }
    this.opts.store.create("pods", pod);
    this.opts.events.record(job, "Normal", "SuccessfulCreate", `Created pod: ${name}`, "job-controller");
  }

  private reconcile(j: JobRuntime): void {
    const job = this.current(j);
    if (!job || j.finished) {
      if (job) this.writeCounts(j);
      return;
    }
    this.writeCounts(j);
    const completions = job.spec.completions ?? 1;
    if (j.succeeded.size >= completions) {
      this.finishJob(j, "Complete");
      return;
    }
    if (j.failed.size > (job.spec.backoffLimit ?? 6)) {
      this.failJob(j, "BackoffLimitExceeded", "Job has reached the specified backoff limit");
      return;
    }
    const active = this.podsOf(j).filter((p) => !this.isTerminal(p) && !p.metadata.deletionTimestamp).length;
    if (active === 0 && !j.retryTimer && !job.metadata.deletionTimestamp) {
      j.retryTimer = setTimeout(() => {
        j.retryTimer = undefined;
        const again = this.current(j);
        const stillNone =
          this.podsOf(j).filter((p) => !this.isTerminal(p) && !p.metadata.deletionTimestamp).length === 0;
        if (again && !j.finished && stillNone) this.createPod(j);
      }, this.retryDelayMs);
    }
  }

  private isTerminal(pod: KubeObject): boolean {
    return pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
  }

  private writeCounts(j: JobRuntime): void {
    const pods = this.podsOf(j);
    const active = pods.filter((p) => !this.isTerminal(p) && !p.metadata.deletionTimestamp);
    this.opts.store.mutate("jobs.batch", j.namespace, j.name, (o) => {
      o.status ??= {};
      o.status.active = active.length;
      o.status.ready = active.filter((p) =>
        (p.status?.conditions ?? []).some((c: any) => c.type === "Ready" && c.status === "True"),
      ).length;
      o.status.terminating = pods.filter((p) => p.metadata.deletionTimestamp).length;
      if (j.succeeded.size > 0) o.status.succeeded = j.succeeded.size;
      if (j.failed.size > 0) o.status.failed = j.failed.size;
    });
  }

  private finishJob(j: JobRuntime, _type: "Complete"): void {
    j.finished = true;
    clearTimeout(j.deadlineTimer);
    clearTimeout(j.retryTimer);
    const now = formatTimestamp();
    const job = this.opts.store.mutate("jobs.batch", j.namespace, j.name, (o) => {
      o.status.completionTime = now;
      o.status.conditions = setCondition(
        o.status.conditions,
        "SuccessCriteriaMet",
        "True",
        "CompletionsReached",
        "Reached expected number of succeeded pods",
      );
      o.status.conditions = setCondition(
        o.status.conditions,
        "Complete",
        "True",
        "CompletionsReached",
        "Reached expected number of succeeded pods",
      );
    });
    if (job) this.opts.events.record(job, "Normal", "Completed", "Job completed", "job-controller");
    this.armTtl(j, job);
  }

  /** Marks the Job Failed and deletes its still-running pods (their containers are killed). */
  private failJob(j: JobRuntime, reason: string, message: string): void {
    if (j.finished) return;
    j.finished = true;
    clearTimeout(j.deadlineTimer);
    clearTimeout(j.retryTimer);
    const job = this.opts.store.mutate("jobs.batch", j.namespace, j.name, (o) => {
      o.status.conditions = setCondition(o.status.conditions, "FailureTarget", "True", reason, message);
      o.status.conditions = setCondition(o.status.conditions, "Failed", "True", reason, message);
    });
    if (job) this.opts.events.record(job, "Warning", reason, message, "job-controller");
    for (const p of this.podsOf(j)) {
      if (this.isTerminal(p) || p.metadata.deletionTimestamp) continue;
      try {
        this.opts.deleter.delete({ storeKey: "pods", namespace: j.namespace, name: p.metadata.name });
      } catch {
        // gone already
      }
    }
    this.writeCounts(j);
    this.armTtl(j, job);
  }

  private armTtl(j: JobRuntime, job: KubeObject | undefined): void {
    const ttl = job?.spec?.ttlSecondsAfterFinished;
    if (typeof ttl !== "number") return;
    j.ttlTimer = setTimeout(() => {
      if (!this.current(j)) return;
      try {
        this.opts.deleter.delete({
          storeKey: "jobs.batch",
          namespace: j.namespace,
          name: j.name,
          propagationPolicy: "Background",
        });
      } catch {
        // gone already
      }
    }, ttl * 1000);
  }
}
