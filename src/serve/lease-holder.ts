// Holds an instance's Lease: takes it at start, renews it every third of its duration, deletes it on a clean stop.
import type { ILease } from "kubernetes-models/coordination.k8s.io/v1/Lease";
import type { LeaseCluster, Namespace } from "../cluster/cluster.js";
import { AlreadyExistsError, ConflictError, NotFoundError } from "../cluster/errors.js";
import { describeError, InfraError } from "../core/errors.js";
import { formatDuration } from "../core/duration.js";
import { buildInstanceLease, formatLeaseName, renewInstanceLease } from "../manifests/instance-lease.js";

export interface LeaseHolderOptions {
  readonly cluster: LeaseCluster;
  readonly namespace: Namespace;
  readonly instance: string;
  /** The Lease's duration (whole seconds, as the Lease says it): another instance may adopt this one's runs once it passes unrenewed. */
  readonly durationSeconds: number;
  /** Between renewals (default a third of the duration, as client-go's leader election renews). */
  readonly renewIntervalMs?: number;
  /** Bound on each call (default the renew interval: a renewal never overlaps the next). */
  readonly callTimeoutMs?: number;
  readonly now?: () => number;
  /** Where a failed renewal, a lost Lease and a failed release are told. */
  readonly warn: (message: string) => void;
}

/** The renew interval of a Lease of `durationSeconds`: a third of it, so two renewals may fail before it expires. */
export function deriveRenewIntervalMs(durationSeconds: number): number {
  return Math.max(100, Math.floor((durationSeconds * 1000) / 3));
}

/**
 * One instance's Lease. `acquire` takes it (creating it, or taking it over whoever held it: the name is the instance's,
 * and a restarted instance takes its own Lease back at once), then renews it on a timer with the resourceVersion it
 * last wrote, so a renewal never overwrites another writer's. `release` stops and deletes it at that version.
 */
export class LeaseHolder {
  readonly #options: LeaseHolderOptions;
  readonly #name: string;
  #lease: ILease | undefined;
  #timer: NodeJS.Timeout | undefined;
  #lastRenewedAt: number | undefined;
  #regainedAt: number | undefined;
  #lost = false;
  #renewing: Promise<void> | undefined;

  constructor(options: LeaseHolderOptions) {
    this.#options = options;
    this.#name = formatLeaseName(options.instance);
  }

  get name(): string {
    return this.#name;
  }

  /** When the Lease was last renewed (epoch ms), undefined before it is held. */
  get lastRenewedAt(): number | undefined {
    return this.#lastRenewedAt;
  }

  /**
   * When the Lease was last held again after a lapse (epoch ms: the renewal that ended it, or the first take after a
   * start that could not take it); undefined while it never lapsed. An adopter may have taken a run meanwhile.
   */
  get regainedAt(): number | undefined {
    return this.#regainedAt;
  }

  /** The Lease's duration in ms: how long a renewal keeps it live. */
  get durationMs(): number {
    return this.#options.durationSeconds * 1000;
  }

  /** True while the last renewal is within the Lease's duration: another instance cannot take this one's runs. */
  get held(): boolean {
    return (
      this.#lastRenewedAt !== undefined && this.#now() - this.#lastRenewedAt < this.#options.durationSeconds * 1000
    );
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }

  get #renewIntervalMs(): number {
    return this.#options.renewIntervalMs ?? deriveRenewIntervalMs(this.#options.durationSeconds);
  }

  #callOptions(): { timeoutMs: number } {
    return { timeoutMs: this.#options.callTimeoutMs ?? Math.max(1000, this.#renewIntervalMs) };
  }

  #terms(): { instance: string; durationSeconds: number; now: number } {
    return { instance: this.#options.instance, durationSeconds: this.#options.durationSeconds, now: this.#now() };
  }

  /**
   * Takes the Lease and starts renewing it. Throws InfraError (`api-error`) when it cannot be read, created or
   * written (a Role without leases, an unreachable cluster): the service does not start without it.
   */
  async acquire(): Promise<void> {
    try {
      await this.#write();
    } catch (error) {
      throw new InfraError(
        "api-error",
        `taking the Lease ${this.#name} of instance ${this.#options.instance}: ${describeError(error)}`,
      );
    }
    this.#schedule();
  }

  /**
   * Takes the Lease as acquire does; when it cannot (an unreachable cluster, a Role without leases), says why and keeps
   * trying at the renewal interval instead of failing, so a service that needs no cluster to start still starts.
   * Until the Lease is held, an instance with --adopt may take this instance's runs. Resolves with whether it is held.
   */
  async acquireOrKeepTrying(): Promise<boolean> {
    try {
      await this.acquire();
      return true;
    } catch (error) {
      this.#lost = true;
      this.#options.warn(
        `${describeError(error)}: serving without it for now, trying again every ${formatDuration(this.#renewIntervalMs)} (until it is held, an instance with --adopt may take this instance's runs)`,
      );
      this.#schedule();
      return false;
    }
  }

  /** Reads the Lease and writes it renewed (created when absent); one more read and write after a conflict. */
  async #write(): Promise<void> {
    const { cluster, namespace } = this.#options;
    for (let attempt = 0; ; attempt++) {
      const started = this.#now();
      try {
        const current = this.#lease ?? (await this.#read());
        this.#lease = current
          ? await cluster.updateLease(namespace, renewInstanceLease(current, this.#terms()), this.#callOptions())
          : await cluster.createLease(namespace, buildInstanceLease(namespace, this.#terms()), this.#callOptions());
        // Held again after a lapse (or taken late): an adopter may have claimed runs in between.
        if (this.#lastRenewedAt === undefined ? this.#lost : started - this.#lastRenewedAt >= this.durationMs)
          this.#regainedAt = started;
        this.#lastRenewedAt = started;
        return;
      } catch (error) {
        // Someone else wrote it since (another process of the same --instance, or an adopter's clean-up): read again.
        if (
          attempt === 0 &&
          (error instanceof ConflictError || error instanceof AlreadyExistsError || error instanceof NotFoundError)
        ) {
          if (error instanceof ConflictError)
            this.#options.warn(
              `the Lease ${this.#name} was changed by someone else since this instance renewed it: is another serve running with --instance ${this.#options.instance}?`,
            );
          this.#lease = undefined;
          continue;
        }
        throw error;
      }
    }
  }

  async #read(): Promise<ILease | undefined> {
    try {
      return await this.#options.cluster.getLease(this.#options.namespace, this.#name, this.#callOptions());
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  #schedule(): void {
    this.#timer = setTimeout(() => {
      this.#renewing = this.#renew().finally(() => {
        this.#renewing = undefined;
        if (this.#timer !== undefined) this.#schedule();
      });
    }, this.#renewIntervalMs);
    this.#timer.unref();
  }

  async #renew(): Promise<void> {
    try {
      await this.#write();
      if (this.#lost) {
        this.#lost = false;
        this.#options.warn(`the Lease ${this.#name} is renewed again`);
      }
    } catch (error) {
      this.#lease = undefined; // read afresh next time
      const since = this.#lastRenewedAt === undefined ? undefined : this.#now() - this.#lastRenewedAt;
      const expired = !this.held;
      this.#options.warn(
        `renewing the Lease ${this.#name}: ${describeError(error)}${since === undefined ? "" : ` (last renewed ${formatDuration(since)} ago)`}${expired && !this.#lost ? `; it has expired: an instance with --adopt may take over this instance's runs` : ""}`,
      );
      if (expired) this.#lost = true;
    }
  }

  /**
   * Stops renewing and deletes the Lease at the version last written (a Lease someone changed since is left to
   * them). Never throws: a release that fails is told, and the Lease expires on its own.
   */
  async release(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#renewing;
    const version = this.#lease?.metadata?.resourceVersion;
    if (this.#lease === undefined) return;
    try {
      await this.#options.cluster.deleteLease(this.#options.namespace, this.#name, {
        ...this.#callOptions(),
        ...(version === undefined ? {} : { resourceVersion: version }),
      });
    } catch (error) {
      this.#options.warn(`releasing the Lease ${this.#name}: ${describeError(error)} (it expires on its own)`);
    }
    this.#lease = undefined;
    this.#lastRenewedAt = undefined;
  }
}
