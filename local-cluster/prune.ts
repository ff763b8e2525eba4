// Removes podman pods (and their volumes) left behind by local clusters whose process died without stopping them.

import { INSTANCE_LABEL, OWNER_PID_LABEL } from "./kubelet.js";
import type { PodmanClient } from "./podman.js";

function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Finds pods labelled by a local cluster whose owner pid is no longer running and removes them with their volumes.
 * Pods without an owner pid (made before the label existed) and pods of live processes are left alone.
 * Returns the names of the pods removed.
 */
export async function pruneOrphanedPods(podman: PodmanClient): Promise<string[]> {
  const pods = await podman.listLabelledPods(INSTANCE_LABEL);
  const orphans = pods.filter((p) => {
    const pid = Number(p.labels[OWNER_PID_LABEL]);
    return Number.isInteger(pid) && pid > 0 && !isProcessAlive(pid);
  });
  for (const pod of orphans) {
    await podman.removePod(pod.name, 0);
    const instance = pod.labels[INSTANCE_LABEL];
    const volumes = (await podman.listVolumes(`${pod.name}-`)).filter(
      (v) => instance && v.startsWith(`lc-${instance}-`),
    );
    await podman.removeVolumes(volumes);
  }
  return orphans.map((p) => p.name);
}
