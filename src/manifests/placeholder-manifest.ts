// Builds a warm placeholder's batch/v1 Job manifest: a pure function of its size, image and duration.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, ROLE_LABEL, WARM_ROLE } from "./labels.js";
import type { PodSpecConfig } from "./pod-spec-config.js";
import { applyOperatorPlacement } from "./operator-pod-config.js";
import {
  buildPlaceholderSecurityContext,
  buildPodSecurityContext,
  buildRestrictedContainerSecurityContext,
} from "./security-context.js";

/** Placeholders are named by slot, `knotless-warm-0` to `knotless-warm-<max-1>`: the names bound how many there can be. */
export const PLACEHOLDER_NAME_PREFIX = "knotless-warm-";
/** The container of a placeholder's pod. */
export const PLACEHOLDER_CONTAINER = "warm";
/** Seconds between SIGTERM and SIGKILL: the placeholder's pod must make room for the claiming run's at once. */
export const PLACEHOLDER_GRACE_SECONDS = 1;
/** A finished placeholder (its deadline passed) is deleted at once: a Job left behind is demand and keeps a paid node. */
export const PLACEHOLDER_TTL_SECONDS = 0;

export interface PlaceholderManifestInput {
  /** `buildPlaceholderName(slot)`. */
  readonly name: string;
  /** Absent: the manifest names no namespace and kubectl creates it in the kubeconfig context's. */
  readonly namespace?: string;
  /** What the pod waits in; a run's own image is already on its node. It needs `sh` and `sleep`. */
  readonly image: string;
  /** Requested like a run's pod, so that the node it holds has room for the run that claims it. */
  readonly cpu: string;
  readonly memory: string;
  /** How long it holds the node: its Job's activeDeadlineSeconds, counted from the Job's start. */
  readonly seconds: number;
  /**
   * The runs' pod keys (settings.pod): the placeholder goes where its runs go (nodeSelector, tolerations, affinity,
   * priority and runtime class), pulls with their secrets, carries their labels and annotations and meets their
   * security profile; podSpecPatch is the run pod's alone.
   */
  readonly pod?: PodSpecConfig;
}

/** `knotless-warm-<slot>`. */
export function buildPlaceholderName(slot: number): string {
  return `${PLACEHOLDER_NAME_PREFIX}${slot}`;
}

/**
 * The pod does nothing but wait: PID 1 sleeps in the background so its TERM trap fires at once. The cluster removes
 * the Job by itself even if no runner comes back: activeDeadlineSeconds ends it, ttlSecondsAfterFinished 0 deletes
 * it. Its shape is pinned by the golden fixtures test/fixtures/manifests/placeholder-*.json.
 */
export function buildPlaceholderManifest(input: PlaceholderManifestInput): IJob {
  const pod = input.pod ?? {};
  const labels = { ...pod.labels, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [ROLE_LABEL]: WARM_ROLE };
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: input.name,
      ...(input.namespace === undefined ? {} : { namespace: input.namespace }),
      labels,
      ...(pod.annotations ? { annotations: { ...pod.annotations } } : {}),
    },
    spec: {
      backoffLimit: 0,
      completions: 1,
      parallelism: 1,
      activeDeadlineSeconds: input.seconds,
      ttlSecondsAfterFinished: PLACEHOLDER_TTL_SECONDS,
      template: {
        metadata: {
          labels,
          // It is there to hold the node: an autoscaler must not scale the node away under it.
          annotations: { ...pod.annotations, "cluster-autoscaler.kubernetes.io/safe-to-evict": "false" },
        },
        spec: applyOperatorPlacement(pod, {
          restartPolicy: "Never",
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: PLACEHOLDER_GRACE_SECONDS,
          securityContext: buildPodSecurityContext(pod.security),
          containers: [
            {
              name: PLACEHOLDER_CONTAINER,
              image: input.image,
              imagePullPolicy: "IfNotPresent",
              command: ["sh", "-c", `trap 'exit 0' TERM INT; sleep ${input.seconds} & wait`],
              securityContext:
                pod.security === "restricted"
                  ? buildRestrictedContainerSecurityContext()
                  : buildPlaceholderSecurityContext(),
              resources: {
                requests: { cpu: input.cpu, memory: input.memory },
                limits: { memory: input.memory },
              },
            },
          ],
        }),
      },
    },
  };
}
