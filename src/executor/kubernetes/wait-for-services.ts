// Waits for the workflow's services to be ready before the first step, and reads their last log lines for the run's log.
import { setTimeout as sleep } from "node:timers/promises";
import { formatDuration } from "../../core/duration.js";
import { CancelledError, describeError, InfraError } from "../../core/errors.js";
import type { ServiceSpec } from "../../manifests/service-containers.js";
import { classifyService } from "../../manifests/service-state.js";
import type { ExecutorContext } from "./context.js";
import type { RunPod } from "../executor.js";
import { readRunPod } from "./wait-for-pod.js";

/** Between reads of the pod's status while services come up (the kubelet probes every second). */
export const SERVICE_POLL_MS = 500;
/** How much of a service's log a failure names: its last lines, bounded in bytes. */
export const FAILURE_LOG_BOUNDS = { tailLines: 20, limitBytes: 4096 } as const;
/** How much of each service's log the run's log gets at the end of the run. */
export const END_LOG_BOUNDS = { tailLines: 50, limitBytes: 16_384 } as const;
/** Consecutive failed reads of the pod tolerated before the cluster counts as unreachable. */
const MAX_READ_FAILURES = 5;

function describeReadiness(service: ServiceSpec): string {
  const check =
    service.readiness === undefined
      ? "its container running"
      : service.readiness.kind === "tcp"
        ? `tcp ${service.readiness.port}`
        : `exec ${service.readiness.command.join(" ")}`;
  return `readiness: ${check}, timeout ${formatDuration(service.readinessTimeoutMs)}`;
}

/** A service's last log lines, or a sentence saying why they cannot be read; never throws. */
export async function readServiceLog(
  ctx: ExecutorContext,
  pod: RunPod,
  service: string,
  bounds: { tailLines: number; limitBytes: number },
): Promise<string> {
  try {
    const text = await ctx.cluster.readContainerLog(ctx.settings.target.namespace, pod.name, service, bounds, {
      signal: ctx.cleanupSignal(),
      timeoutMs: 10_000,
    });
    return text.trimEnd() === "" ? "(its log is empty)" : text.trimEnd();
  } catch (error) {
    return `(its log could not be read: ${describeError(error)})`;
  }
}

/**
 * Resolves once every service's container is ready (its readinessProbe passed, as the pod's status says), each
 * within its own readiness timeout from the call. Throws InfraError `service-not-ready` naming the first service
 * that failed (exited, cannot start) or ran out of time, with its last log lines (also emitted as a `service-log`
 * event, and its name added to `logged`); `cluster-unreachable` when the pod cannot be read; CancelledError on the run's signal.
 */
export async function waitForServices(
  ctx: ExecutorContext,
  pod: RunPod,
  logged: Set<string> = new Set(),
): Promise<string> {
  const services = ctx.settings.services ?? [];
  const started = Date.now();
  const waiting = new Map(services.map((service) => [service.name, service]));
  const readyAfter: string[] = [];
  let failures = 0;
  const fail = async (service: ServiceSpec, why: string): Promise<never> => {
    const log = await readServiceLog(ctx, pod, service.name, FAILURE_LOG_BOUNDS);
    ctx.emit({ kind: "service-log", service: service.name, when: "not-ready", text: log });
    logged.add(service.name);
    throw new InfraError(
      "service-not-ready",
      `service ${service.name} (${service.image}) did not become ready: ${why} (${describeReadiness(service)}); its last log lines:\n${log}`,
    );
  };
  for (;;) {
    const read = await readRunPod(ctx);
    const now = Date.now();
    if ("failure" in read) {
      failures += 1;
      if (failures >= MAX_READ_FAILURES)
        throw new InfraError(
          "cluster-unreachable",
          `cannot read the run's pod while its services start (${failures} tries): ${read.failure}`,
        );
    } else {
      failures = 0;
      for (const service of [...waiting.values()]) {
        const state = classifyService(read.pod, service.name);
        if (state.kind === "ready") {
          waiting.delete(service.name);
          readyAfter.push(`${service.name} after ${formatDuration(now - started)}`);
        } else if (state.kind === "failed") await fail(service, state.detail);
        else if (now - started >= service.readinessTimeoutMs)
          await fail(service, `not ready after ${formatDuration(now - started)}, ${state.detail}`);
      }
      if (waiting.size === 0)
        return `${services.length} ${services.length === 1 ? "service" : "services"} ready: ${readyAfter.join(", ")}`;
    }
    try {
      await sleep(SERVICE_POLL_MS, undefined, { signal: ctx.signal });
    } catch {
      throw new CancelledError();
    }
  }
}
