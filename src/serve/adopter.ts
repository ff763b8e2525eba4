// `serve --adopt`: finds the unfinished runs of instances whose Lease expired, claims each one, and hands it to the service to re-attach.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { Cluster, Namespace } from "../cluster/cluster.js";
import { ConflictError } from "../cluster/errors.js";
import { describeError } from "../core/errors.js";
import { formatLeaseName, indexLeases } from "../manifests/instance-lease.js";
import { INSTANCE_LEASE_SELECTOR } from "../manifests/instance-lease.js";
import { readInstance } from "../manifests/job-annotations.js";
import { CONTINUATION_ANNOTATION, MANAGED_SELECTOR } from "../manifests/labels.js";
import { readFinished, readJobRole } from "../ops/classify-job.js";
import { claimRun } from "./claim-run.js";
import { decodeContinuation, type RunContinuation } from "./run-ownership.js";

/** A run this instance has just claimed: its Job as claimed, the instance it came from, and what it needs to go on. */
export interface Adoption {
  readonly job: IJob;
  readonly from: string;
  readonly continuation: RunContinuation;
}

export interface AdopterOptions {
  readonly cluster: Pick<Cluster, "listLeases" | "listJobs" | "getJob" | "claimJob" | "deleteLease">;
  readonly namespace: Namespace;
  /** This instance: its own runs are never adopted here (a restart re-attaches them). */
  readonly instance: string;
  /** Between two looks at the Leases and Jobs. */
  readonly pollMs: number;
  /** A Lease counts as dead only this long after it expired: the hosts' clocks may differ by as much. */
  readonly graceMs?: number;
  readonly now?: () => number;
  /** Records the claimed run in this instance's store and re-attaches to it; a throw is told and the run left claimed. */
  readonly adopt: (adoption: Adoption) => void | Promise<void>;
  readonly warn: (message: string) => void;
}

/** What one look found: the runs adopted, by Job name. */
export interface AdoptionScan {
  readonly adopted: readonly string[];
}

/**
 * Looks for runs to adopt every `pollMs`: a run Job that is not over, owned (its instance annotation) by another
 * instance whose Lease is gone or expired more than `graceMs` ago, and that carries its continuation. Each is claimed
 * (claimRun: one adopter wins) and then handed to `adopt`. Once every run of a dead instance is taken, its expired
 * Lease is deleted at the version read (one renewed meanwhile stays).
 */
export class Adopter {
  readonly #options: AdopterOptions;
  #timer: NodeJS.Timeout | undefined;
  #scanning: Promise<unknown> | undefined;
  #stopped = false;
  /** Jobs already told about (no continuation, unreadable): told once, not every poll. */
  readonly #told = new Set<string>();

  constructor(options: AdopterOptions) {
    this.#options = options;
  }

  /** Starts looking: the first look at once (a restart after a peer's crash adopts without waiting a poll). */
  start(): void {
    const tick = (): void => {
      this.#scanning = this.scan()
        .catch((error: unknown) => this.#options.warn(`looking for runs to adopt: ${describeError(error)}`))
        .finally(() => {
          if (!this.#stopped) this.#timer = setTimeout(tick, this.#options.pollMs).unref();
        });
    };
    tick();
  }

  /** Stops looking; resolves once a look in progress (and the adoptions it started) is over. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#scanning;
  }

  /** One look: lists the Leases and our Jobs, claims and adopts what it may. Throws when either list fails. */
  async scan(): Promise<AdoptionScan> {
    const { cluster, namespace, instance } = this.#options;
    const [leases, jobs] = await Promise.all([
      cluster.listLeases(namespace, INSTANCE_LEASE_SELECTOR),
      cluster.listJobs(namespace, MANAGED_SELECTOR),
    ]);
    const now = (this.#options.now ?? Date.now)();
    const states = indexLeases(leases, now);
    const grace = this.#options.graceMs ?? 0;
    const isDead = (owner: string): boolean => {
      const state = states.get(owner);
      return state === undefined || (!state.live && (state.expiresAt ?? 0) + grace <= now);
    };
    const adopted: string[] = [];
    const left = new Set<string>(); // dead instances with a run not taken here: their Lease stays
    for (const job of jobs) {
      const owner = readInstance(job);
      const name = job.metadata?.name ?? "";
      if (readJobRole(job) !== "run" || owner === undefined || owner === instance) continue;
      if (readFinished(job) || job.metadata?.deletionTimestamp !== undefined || !isDead(owner)) continue;
      if (this.#stopped) return { adopted };
      const continuation = this.#readContinuation(job, owner);
      if (!continuation) {
        left.add(owner);
        continue;
      }
      const outcome = await claimRun(cluster, namespace, name, { instance, from: owner });
      if (outcome.kind !== "claimed") continue; // another adopter's, or over: nothing of ours
      adopted.push(name);
      try {
        await this.#options.adopt({ job: outcome.job, from: owner, continuation });
      } catch (error) {
        this.#options.warn(`adopting run Job ${name} from instance ${owner}: ${describeError(error)}`);
      }
    }
    for (const [owner, state] of states)
      if (owner !== instance && !left.has(owner) && isDead(owner) && state.expiresAt !== undefined)
        await this.#deleteExpiredLease(leases.find((lease) => formatLeaseName(owner) === lease.metadata?.name));
    return { adopted };
  }

  #readContinuation(job: IJob, owner: string): RunContinuation | undefined {
    const name = job.metadata?.name ?? "";
    const value = job.metadata?.annotations?.[CONTINUATION_ANNOTATION];
    try {
      if (value === undefined) throw new Error("it carries no continuation (its plan was too large for an annotation)");
      return decodeContinuation(value);
    } catch (error) {
      if (!this.#told.has(name))
        this.#options.warn(
          `run Job ${name} of instance ${owner}, whose Lease expired, cannot be adopted: ${describeError(error)}; gc deletes it once its heartbeat is stale`,
        );
      this.#told.add(name);
      return undefined;
    }
  }

  async #deleteExpiredLease(
    lease: { metadata?: { name?: string; resourceVersion?: string } } | undefined,
  ): Promise<void> {
    const name = lease?.metadata?.name;
    const version = lease?.metadata?.resourceVersion;
    if (name === undefined || version === undefined) return;
    try {
      await this.#options.cluster.deleteLease(this.#options.namespace, name, { resourceVersion: version });
    } catch (error) {
      if (!(error instanceof ConflictError))
        this.#options.warn(`deleting the expired Lease ${name}: ${describeError(error)}`);
    }
  }
}
