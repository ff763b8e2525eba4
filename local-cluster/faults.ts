// The fault-injection configuration (validated with zod) and the injector that decides, per occasion, whether a fault fires.

import { z } from "zod";

/** A JavaScript regular expression matched against the fault's subject (documented per fault); absent = every subject. */
const match = z.string().optional();
/** Fire for the first N matching occasions only (counted since the faults were last set); absent = every time. */
const count = z.number().int().positive().optional();

export const FaultConfigSchema = z
  .object({
    /** Delay each API request (subject: `METHOD /path?query`, exec upgrades included) by `ms`. */
    latency: z.strictObject({ ms: z.number().int().nonnegative(), match, count }).optional(),
    /** Keep a new pod Pending (Unschedulable, FailedScheduling events) for `seconds` before it starts, as a cluster scaling up from zero nodes. Subject: `namespace/podName`. */
    schedulingDelay: z.strictObject({ seconds: z.number().nonnegative(), match, count }).optional(),
    /** The pod's image cannot be pulled: ErrImagePull, then ImagePullBackOff; the container never starts. Subject: `namespace/podName image`. */
    imagePullFailure: z.strictObject({ match, count, message: z.string().optional() }).optional(),
    /** Refuse the WebSocket upgrade of an exec with an HTTP error, so kubectl prints `unable to upgrade connection`. Subject: the command joined by spaces. */
    execUpgradeRefused: z
      .strictObject({
        match,
        count,
        status: z.number().int().min(400).max(599).optional(),
        message: z.string().optional(),
      })
      .optional(),
    /**
     * Cut an exec stream after `afterSeconds` and/or after `afterBytes` bytes of stdout+stderr, while the process in the
     * container keeps running. mode "error": the TCP connection is dropped (kubectl fails); mode "clean": a normal
     * WebSocket close without an exit status (kubectl may exit 0). Subject: the command joined by spaces.
     */
    execStreamCut: z
      .strictObject({
        afterSeconds: z.number().nonnegative().optional(),
        afterBytes: z.number().int().nonnegative().optional(),
        mode: z.enum(["error", "clean"]).optional(),
        match,
        count,
      })
      .refine((f) => f.afterSeconds !== undefined || f.afterBytes !== undefined, {
        message: "execStreamCut needs afterSeconds or afterBytes",
      })
      .optional(),
    /**
     * `afterSeconds` after a pod's container starts, evict the pod (container killed, pod Failed, reason Evicted) or,
     * with mode "delete", delete the pod object (as `kubectl delete pod` by someone else). Subject: `namespace/podName`.
     */
    podEviction: z
      .strictObject({
        afterSeconds: z.number().nonnegative(),
        mode: z.enum(["evict", "delete"]).optional(),
        match,
        count,
      })
      .optional(),
    /** Answer creates with 500 InternalError (nothing is stored). Subject: `resource namespace/name`, e.g. `jobs default/run-1`. */
    createError: z.strictObject({ match, count, message: z.string().optional() }).optional(),
    /** Stop listening on the API port (open connections are dropped) after `afterSeconds` (default 0), for `forSeconds` (absent = until the faults change). The admin port stays up. */
    serverDown: z
      .strictObject({ afterSeconds: z.number().nonnegative().optional(), forSeconds: z.number().positive().optional() })
      .optional(),
  })
  .strict();

/** Faults as written in a file or sent to PUT /_faults. */
export type FaultConfig = z.input<typeof FaultConfigSchema>;
export type ParsedFaultConfig = z.output<typeof FaultConfigSchema>;
export type FaultName = Exclude<keyof ParsedFaultConfig, "serverDown">;

export interface FaultFiring {
  fault: FaultName;
  subject: string;
  at: string;
}

/** Validates untrusted fault JSON; throws an Error listing every problem. */
export function parseFaultConfig(input: unknown): ParsedFaultConfig {
  const result = FaultConfigSchema.safeParse(input ?? {});
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
    throw new Error(`invalid fault configuration: ${problems}`);
  }
  return result.data;
}

/** Holds the current faults and their counters; `take` answers whether a fault fires for a subject and counts it. */
export class FaultInjector {
  private config: ParsedFaultConfig = {};
  private readonly used = new Map<FaultName, number>();
  private readonly firings: FaultFiring[] = [];
  private readonly changeListeners = new Set<(config: ParsedFaultConfig) => void>();

  get current(): ParsedFaultConfig {
    return this.config;
  }

  /** Replaces every fault and resets the counters. */
  set(config: ParsedFaultConfig): void {
    this.config = config;
    this.used.clear();
    for (const l of [...this.changeListeners]) l(config);
  }

  onChange(listener: (config: ParsedFaultConfig) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** The fault's settings when it fires for this subject (and counts the firing), otherwise undefined. */
  take<N extends FaultName>(name: N, subject: string): NonNullable<ParsedFaultConfig[N]> | undefined {
    const fault = this.config[name] as
      (NonNullable<ParsedFaultConfig[N]> & { match?: string; count?: number }) | undefined;
    if (!fault) return undefined;
    if (fault.match !== undefined && !new RegExp(fault.match).test(subject)) return undefined;
    const used = this.used.get(name) ?? 0;
    if (fault.count !== undefined && used >= fault.count) return undefined;
    this.used.set(name, used + 1);
    this.firings.push({ fault: name, subject, at: new Date().toISOString() });
    if (this.firings.length > 1000) this.firings.shift();
    return fault;
  }

  /** Every firing so far (most recent last), for tests and GET /_faults. */
  history(): FaultFiring[] {
    return [...this.firings];
  }
}
