// Builds the run's batch/v1 Job manifest: a pure function of the run's settings.
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { IContainer } from "kubernetes-models/v1/Container";
import { formatRepoMount, PVC_CACHE_VOLUME } from "../pod/pvc-layout.js";
import { buildKeepAliveScript, DEFAULT_POD_IDLE_SECONDS } from "../pod/keep-alive.js";
import { POD_VOLUMES, POD_WORK_DIR } from "../workflow/pod-paths.js";
import { RUN_CONTAINER } from "./names.js";
import type { PodSpecConfig } from "./pod-spec-config.js";
import { buildPodSecurityContext, buildRunContainerSecurityContext } from "./security-context.js";
import { applyOperatorPodConfig } from "./operator-pod-config.js";
import {
  CREATE_TOKEN_ANNOTATION,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  OWNER_ANNOTATION,
  POD_IDLE_TIMEOUT_ANNOTATION,
  RUN_ID_ANNOTATION,
  RUN_ID_LABEL,
} from "./labels.js";
import { formatProcessIdentity, type ProcessIdentity } from "./owner.js";

/** Seconds past the run's own budget before the API server kills the Job (a backstop if the runner dies). */
export const DEADLINE_MARGIN_SECONDS = 300;
/** Seconds a finished Job stays for inspection before the cluster deletes it. */
export const TTL_AFTER_FINISHED_SECONDS = 300;
/** Seconds between SIGTERM and SIGKILL when the pod is deleted. */
export const TERMINATION_GRACE_SECONDS = 5;

export interface JobManifestInput {
  readonly jobName: string;
  /** Absent: the manifest names no namespace and kubectl creates the Job in the kubeconfig context's. */
  readonly namespace?: string;
  readonly runId: string;
  readonly runIdLabel: string;
  readonly image: string;
  readonly cpu: string;
  readonly memory: string;
  /** The whole budget of the run in the runner's eyes: pod wait plus run timeout. */
  readonly budgetSeconds: number;
  readonly createToken: string;
  /** The runner process, recorded on the Job for `list` and for operators; absent, no owner annotation. */
  readonly owner?: ProcessIdentity;
  /** The caller's annotations on the Job only (serve's owning instance and the run's continuation); the runner's own win. */
  readonly jobAnnotations?: Readonly<Record<string, string>>;
  /**
   * The PersistentVolumeClaim of the PVC cache backend (`--cache-pvc`, settings.cacheBackend.claim) and the repository
   * the run's caches belong to: only that repository's directory of the claim is mounted (src/pod/pvc-layout.ts's
   * formatRepoMount), so a run can neither read nor write another repository's entries. The operator creates the
   * claim once; the runner never creates or deletes it. Absent: no cache volume.
   */
  readonly cacheClaim?: { readonly claim: string; readonly repo: string };
  /** Seconds without a runner exec after which the pod stops itself (`--pod-idle-timeout`); default 600. */
  readonly podIdleSeconds?: number;
  /** The pod's nodeSelector and runtimeClassName (a workflow's `architecture`, the microvm engine's configuration). */
  readonly placement?: { readonly nodeSelector?: Readonly<Record<string, string>>; readonly runtimeClassName?: string };
  /** The run container's `ephemeral-storage` request and limit (`pod.ephemeralStorage`); absent: neither. */
  readonly ephemeralStorage?: { readonly request?: string; readonly limit?: string };
  /** Containers beside the run container (the Docker daemon of `virtualisation.docker`, services without native sidecars). */
  readonly extraContainers?: readonly IContainer[];
  /** Init containers, started before the run container: the services as native sidecars (restartPolicy Always). */
  readonly initContainers?: readonly IContainer[];
  /**
   * The operator's pod keys (`pod` of --config, settings.pod): placement, labels and annotations under the runner's
   * own, pull secrets, the security profile, and podSpecPatch applied last. Absent: none, the default profile.
   */
  readonly pod?: PodSpecConfig;
}

/**
 * Returns the Job manifest; its shape is pinned by the golden fixtures in test/fixtures/manifests. The container has
 * no `env`: the steps' variables reach them through files in the pod (src/pod/helper-script.ts), so no value of a
 * run is readable from the Job, and secrets have their own memory-backed volume.
 */
export function buildJobManifest(input: JobManifestInput): IJob {
  const idleSeconds = input.podIdleSeconds ?? DEFAULT_POD_IDLE_SECONDS;
  const pod = input.pod ?? {};
  const labels = { ...pod.labels, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [RUN_ID_LABEL]: input.runIdLabel };
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: input.jobName,
      ...(input.namespace === undefined ? {} : { namespace: input.namespace }),
      labels,
      // No heartbeat annotation yet: until the first refresh, the Job's creationTimestamp is its heartbeat, so the
      // manifest stays a function of the settings alone.
      annotations: {
        ...pod.annotations,
        ...input.jobAnnotations,
        [RUN_ID_ANNOTATION]: input.runId,
        [CREATE_TOKEN_ANNOTATION]: input.createToken,
        ...(input.owner ? { [OWNER_ANNOTATION]: formatProcessIdentity(input.owner) } : {}),
      },
    },
    spec: {
      backoffLimit: 0,
      completions: 1,
      parallelism: 1,
      activeDeadlineSeconds: input.budgetSeconds + DEADLINE_MARGIN_SECONDS,
      ttlSecondsAfterFinished: TTL_AFTER_FINISHED_SECONDS,
      template: {
        metadata: {
          labels,
          // The run's node must not be scaled away under it.
          annotations: {
            ...pod.annotations,
            "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
            [POD_IDLE_TIMEOUT_ANNOTATION]: String(idleSeconds),
          },
        },
        spec: applyOperatorPodConfig(pod, {
          restartPolicy: "Never",
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
          securityContext: buildPodSecurityContext(pod.security),
          ...(input.placement?.nodeSelector ? { nodeSelector: { ...input.placement.nodeSelector } } : {}),
          ...(input.placement?.runtimeClassName ? { runtimeClassName: input.placement.runtimeClassName } : {}),
          ...(input.initContainers && input.initContainers.length > 0
            ? { initContainers: [...input.initContainers] }
            : {}),
          containers: [
            {
              name: RUN_CONTAINER,
              image: input.image,
              imagePullPolicy: "IfNotPresent",
              command: ["sh", "-c", buildKeepAliveScript(idleSeconds)],
              workingDir: POD_WORK_DIR,
              securityContext: buildRunContainerSecurityContext(pod.security),
              resources: {
                requests: {
                  cpu: input.cpu,
                  memory: input.memory,
                  ...(input.ephemeralStorage?.request ? { "ephemeral-storage": input.ephemeralStorage.request } : {}),
                },
                limits: {
                  memory: input.memory,
                  ...(input.ephemeralStorage?.limit ? { "ephemeral-storage": input.ephemeralStorage.limit } : {}),
                },
              },
              volumeMounts: [
                ...POD_VOLUMES.map(({ name, mountPath }) => ({ name, mountPath })),
                ...(input.cacheClaim === undefined
                  ? []
                  : [{ name: PVC_CACHE_VOLUME, ...formatRepoMount(input.cacheClaim.repo) }]),
              ],
            },
            ...(input.extraContainers ?? []),
          ],
          volumes: [
            ...POD_VOLUMES.map(({ name, medium }) => ({ name, emptyDir: medium ? { medium } : {} })),
            ...(input.cacheClaim === undefined
              ? []
              : [{ name: PVC_CACHE_VOLUME, persistentVolumeClaim: { claimName: input.cacheClaim.claim } }]),
          ],
        }),
      },
    },
  };
}
