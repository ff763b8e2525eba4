// An instance's Lease (coordination.k8s.io/v1): its name, the object a holder writes, and whether it is live: pure.
import type { ILease } from "kubernetes-models/coordination.k8s.io/v1/Lease";
import { INSTANCE_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE } from "./labels.js";

/** The label selector that finds every instance's Lease in a namespace. */
export const INSTANCE_LEASE_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE},${INSTANCE_LABEL}`;

/** Longest instance name: a label value (63) and, with the Lease's prefix, an object name. */
export const MAX_INSTANCE_NAME = 63;

const LEASE_PREFIX = "knotless-instance-";

/**
 * Why `name` cannot name an instance (a DNS-1123 label: lowercase letters, digits and `-`, starting and ending with a
 * letter or digit, at most 63 characters), or undefined when it can.
 */
export function checkInstanceName(name: string): string | undefined {
  if (name.length === 0) return "is empty";
  if (name.length > MAX_INSTANCE_NAME) return `is ${name.length} characters long; at most ${MAX_INSTANCE_NAME}`;
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name))
    return "is not a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit)";
  return undefined;
}

/** The instance's Lease's name. */
export function formatLeaseName(instance: string): string {
  return `${LEASE_PREFIX}${instance}`;
}

/** What a holder writes into its Lease. Times are epoch ms. */
export interface LeaseTerms {
  readonly instance: string;
  readonly durationSeconds: number;
  readonly now: number;
}

/** Kubernetes' MicroTime: RFC 3339 with microseconds. */
function formatMicroTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/** A new Lease held by the instance from `now`. */
export function buildInstanceLease(namespace: string | undefined, terms: LeaseTerms): ILease {
  const at = formatMicroTime(terms.now);
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: {
      name: formatLeaseName(terms.instance),
      ...(namespace === undefined ? {} : { namespace }),
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [INSTANCE_LABEL]: terms.instance },
    },
    spec: {
      holderIdentity: terms.instance,
      leaseDurationSeconds: terms.durationSeconds,
      acquireTime: at,
      renewTime: at,
      leaseTransitions: 0,
    },
  } as ILease;
}

/**
 * The Lease as read, renewed by the instance at `now` (its resourceVersion kept: the update is refused when someone
 * changed it since). A Lease that was not live is taken anew: acquireTime now, one more transition.
 */
export function renewInstanceLease(lease: ILease, terms: LeaseTerms): ILease {
  const at = formatMicroTime(terms.now);
  const taken = !readLeaseState(lease, terms.now).live || lease.spec?.holderIdentity !== terms.instance;
  return {
    ...lease,
    spec: {
      ...lease.spec,
      holderIdentity: terms.instance,
      leaseDurationSeconds: terms.durationSeconds,
      renewTime: at,
      ...(taken ? { acquireTime: at, leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + 1 } : {}),
    },
  } as ILease;
}

/** What a Lease says about its instance. */
export interface LeaseState {
  /** The instance whose Lease it is (its label, else its holder). */
  readonly instance: string | undefined;
  /** Held and renewed within its duration. */
  readonly live: boolean;
  /** When it expires (or expired), epoch ms; undefined when it says no renew time or duration. */
  readonly expiresAt: number | undefined;
}

/** Whether the Lease is live at `now`: a holder, and renewTime + leaseDurationSeconds still ahead. */
export function readLeaseState(lease: ILease, now: number): LeaseState {
  const instance = lease.metadata?.labels?.[INSTANCE_LABEL] ?? lease.spec?.holderIdentity ?? undefined;
  const renewed = lease.spec?.renewTime === undefined ? NaN : Date.parse(String(lease.spec.renewTime));
  const duration = lease.spec?.leaseDurationSeconds;
  const expiresAt = Number.isFinite(renewed) && typeof duration === "number" ? renewed + duration * 1000 : undefined;
  const held = typeof lease.spec?.holderIdentity === "string" && lease.spec.holderIdentity !== "";
  return { instance, live: held && expiresAt !== undefined && expiresAt > now, expiresAt };
}

/** Each instance's Lease state by instance name, for list, gc and an adopter. */
export function indexLeases(leases: readonly ILease[], now: number): Map<string, LeaseState> {
  const byInstance = new Map<string, LeaseState>();
  for (const lease of leases) {
    const state = readLeaseState(lease, now);
    if (state.instance !== undefined) byInstance.set(state.instance, state);
  }
  return byInstance;
}
