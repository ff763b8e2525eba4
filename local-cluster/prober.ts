// The kubelet's readiness probes of a pod's containers: exec in the container, or a TCP connection to the pod's IP.

import { connect } from "node:net";
import type { PodmanClient } from "./podman.js";

/** One container's readinessProbe, as the Pod spec writes it (httpGet is not run locally: it counts as failing). */
export interface ReadinessProbe {
  readonly exec?: { readonly command?: readonly string[] };
  readonly tcpSocket?: { readonly port?: number | string };
  readonly periodSeconds?: number;
  readonly timeoutSeconds?: number;
}

/** Whether a TCP connection to host:port is accepted within timeoutMs. */
export function probeTcp(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/** The IP address podman gave the pod's network namespace (its infra container's), or undefined. */
export async function readPodIp(podman: PodmanClient, podmanName: string): Promise<string | undefined> {
  const infra = await podman.run(["pod", "inspect", podmanName, "--format", "{{.InfraContainerID}}"]);
  if (infra.code !== 0 || infra.stdout.trim() === "") return undefined;
  const ip = await podman.run([
    "inspect",
    infra.stdout.trim(),
    "--format",
    "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
  ]);
  return ip.code === 0 ? ip.stdout.trim().split(/\s+/)[0] || undefined : undefined;
}

/**
 * Runs one probe as the kubelet would: `exec` passes when the command exits 0 in the container (podman exec);
 * `tcpSocket` when the pod's IP accepts a connection on the port (from the node, as a kubelet connects).
 */
export async function runProbe(
  podman: PodmanClient,
  probe: ReadinessProbe,
  container: string,
  podIp: () => Promise<string | undefined>,
): Promise<boolean> {
  const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
  if (probe.exec?.command && probe.exec.command.length > 0) {
    const result = await podman.run(["exec", container, ...probe.exec.command]);
    return result.code === 0;
  }
  const port = Number(probe.tcpSocket?.port);
  if (Number.isInteger(port) && port > 0) {
    const ip = await podIp();
    return ip !== undefined && probeTcp(ip, port, timeoutMs);
  }
  return false;
}
