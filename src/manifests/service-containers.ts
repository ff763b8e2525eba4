// The workflow's services as containers of the run's pod: native sidecars where the server has them, else plain containers.
import type { IContainer } from "kubernetes-models/v1/Container";
import type { ServiceReadiness, WorkflowService } from "../workflow/workflow-types.js";
import type { EnvVar } from "../core/env-var.js";
import type { PodSecurityProfile } from "./pod-spec-config.js";
import { buildRunContainerSecurityContext } from "./security-context.js";

/** One service as a run carries it: what the manifest and the readiness wait need, no file positions. */
export interface ServiceSpec {
  readonly name: string;
  readonly image: string;
  readonly env: readonly EnvVar[];
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly ports: readonly number[];
  readonly readiness?: ServiceReadiness;
  readonly readinessTimeoutMs: number;
}

/** How the services sit in the pod: `sidecar`, init containers with restartPolicy Always (Kubernetes >= 1.29); `container`, beside the run container. */
export type ServiceMode = "sidecar" | "container";

/** The first Kubernetes minor with native sidecars on by default (the SidecarContainers gate is beta and enabled from 1.29). */
export const NATIVE_SIDECAR_MINOR = 29;

/** Seconds between the kubelet's readiness probes of a service: the runner reads the result from the pod's status. */
export const SERVICE_PROBE_PERIOD_SECONDS = 1;

/** The workflow's services as the run carries them. Pure. */
export function planServices(services: readonly WorkflowService[]): ServiceSpec[] {
  return services.map((service) => ({
    name: service.name,
    image: service.image,
    env: service.environment,
    ...(service.command !== undefined ? { command: service.command } : {}),
    ...(service.args !== undefined ? { args: service.args } : {}),
    ports: service.ports,
    ...(service.readiness !== undefined ? { readiness: service.readiness } : {}),
    readinessTimeoutMs: service.readinessTimeoutMs,
  }));
}

/** Native sidecars on a 1.x server of minor NATIVE_SIDECAR_MINOR or later (or a major past 1), plain containers before. */
export function chooseServiceMode(version: { readonly major: number; readonly minor: number }): ServiceMode {
  return version.major > 1 || (version.major === 1 && version.minor >= NATIVE_SIDECAR_MINOR) ? "sidecar" : "container";
}

/**
 * One service's container. It gets the run container's hardening (no privilege escalation, the same few
 * capabilities: an image that starts as root and drops to its own user, as database images do, needs SETUID and
 * SETGID). Its readiness becomes a readinessProbe the kubelet runs every second: `tcp` connects to the pod's IP (so
 * the service must listen on all addresses, as images do by default), `exec` runs in the service's container. The
 * runner enforces the timeout itself, from the pod's status (src/executor/kubernetes/wait-for-services.ts). Under the `restricted`
 * profile a service runs as the run container does (non-root, no capability), or admission would refuse the pod.
 */
export function buildServiceContainer(
  service: ServiceSpec,
  mode: ServiceMode,
  profile: PodSecurityProfile = "default",
): IContainer {
  const readiness = service.readiness;
  const probe =
    readiness === undefined
      ? undefined
      : readiness.kind === "tcp"
        ? { tcpSocket: { port: readiness.port } }
        : { exec: { command: [...readiness.command] } };
  return {
    name: service.name,
    image: service.image,
    imagePullPolicy: "IfNotPresent",
    ...(mode === "sidecar" ? { restartPolicy: "Always" } : {}),
    ...(service.command !== undefined ? { command: [...service.command] } : {}),
    ...(service.args !== undefined ? { args: [...service.args] } : {}),
    ...(service.env.length > 0 ? { env: service.env.map(({ name, value }) => ({ name, value })) } : {}),
    ...(service.ports.length > 0
      ? { ports: service.ports.map((port) => ({ containerPort: port, protocol: "TCP" })) }
      : {}),
    ...(probe
      ? {
          readinessProbe: {
            ...probe,
            periodSeconds: SERVICE_PROBE_PERIOD_SECONDS,
            timeoutSeconds: 1,
            successThreshold: 1,
            failureThreshold: 1,
          },
        }
      : {}),
    securityContext: buildRunContainerSecurityContext(profile),
  };
}
