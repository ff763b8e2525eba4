// The Docker daemon container of `virtualisation.docker`: where the steps reach it, and its container in the run's pod.
import type { IContainer } from "kubernetes-models/v1/Container";
import { POD_VOLUMES, POD_WORK_DIR } from "../workflow/pod-paths.js";

/** The daemon listens on the pod's loopback without TLS: only the pod's own containers can reach it. */
export const DOCKER_HOST = "tcp://127.0.0.1:2375";
/** The daemon container's name in the run's pod. */
export const DOCKER_CONTAINER = "docker";

/**
 * The daemon's container: privileged (dockerd needs it), TLS off so it listens on DOCKER_HOST, and the pod's /work
 * mounted at the same path, so a step's `docker run -v "$PWD":/src` binds the checkout the step sees.
 */
export function buildDockerDaemonContainer(image: string): IContainer {
  const work = POD_VOLUMES.find((volume) => volume.mountPath === POD_WORK_DIR);
  return {
    name: DOCKER_CONTAINER,
    image,
    imagePullPolicy: "IfNotPresent",
    env: [{ name: "DOCKER_TLS_CERTDIR", value: "" }],
    securityContext: { privileged: true },
    ...(work ? { volumeMounts: [{ name: work.name, mountPath: work.mountPath }] } : {}),
  };
}
