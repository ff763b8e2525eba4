// Finds where a pod-spec patch (`pod.podSpecPatch`) would touch what the runner relies on: a pure check, run when the config is read.
import { PVC_CACHE_MOUNT_PATH, PVC_CACHE_VOLUME } from "../pod/pvc-layout.js";
import { POD_VOLUMES } from "../workflow/pod-paths.js";
import { RUN_CONTAINER } from "./names.js";
import { PATCH_DIRECTIVE } from "./strategic-merge.js";

/** One refused part of the patch: its path inside the patch (keys and list indexes) and why. */
export interface PatchConflict {
  readonly path: readonly (string | number)[];
  readonly message: string;
}

/** PodSpec's fields (core/v1): a key outside them is a typo, refused with the list. */
export const POD_SPEC_FIELDS: readonly string[] = [
  "activeDeadlineSeconds",
  "affinity",
  "automountServiceAccountToken",
  "containers",
  "dnsConfig",
  "dnsPolicy",
  "enableServiceLinks",
  "ephemeralContainers",
  "hostAliases",
  "hostIPC",
  "hostNetwork",
  "hostPID",
  "hostUsers",
  "hostname",
  "imagePullSecrets",
  "initContainers",
  "nodeName",
  "nodeSelector",
  "os",
  "overhead",
  "preemptionPolicy",
  "priority",
  "priorityClassName",
  "readinessGates",
  "resourceClaims",
  "resources",
  "restartPolicy",
  "runtimeClassName",
  "schedulerName",
  "schedulingGates",
  "securityContext",
  "serviceAccount",
  "serviceAccountName",
  "setHostnameAsFQDN",
  "shareProcessNamespace",
  "subdomain",
  "terminationGracePeriodSeconds",
  "tolerations",
  "topologySpreadConstraints",
  "volumes",
];

const RUNNER_VOLUMES: ReadonlySet<string> = new Set([...POD_VOLUMES.map((volume) => volume.name), PVC_CACHE_VOLUME]);
const RUNNER_MOUNT_PATHS: ReadonlySet<string> = new Set([
  ...POD_VOLUMES.map((volume) => volume.mountPath),
  PVC_CACHE_MOUNT_PATH,
]);
/** The run container's keys that are the runner's: its keep-alive (command, args) and where the steps start. */
const RUN_CONTAINER_KEYS = ["command", "args", "workingDir"];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isReplaceItem(item: unknown): boolean {
  return isObject(item) && item[PATCH_DIRECTIVE] === "replace";
}

/** The conflicts of one container's patch (`at` is its path in the patch). */
function checkContainer(container: Record<string, unknown>, at: (string | number)[], conflicts: PatchConflict[]): void {
  const isRun = container.name === RUN_CONTAINER;
  if (isRun && (container[PATCH_DIRECTIVE] === "delete" || container[PATCH_DIRECTIVE] === "replace")) {
    conflicts.push({
      path: [...at, PATCH_DIRECTIVE],
      message: `the run container "${RUN_CONTAINER}" is the runner's: it cannot be deleted or replaced`,
    });
  }
  if (isRun) {
    for (const key of RUN_CONTAINER_KEYS) {
      if (Object.hasOwn(container, key))
        conflicts.push({
          path: [...at, key],
          message: `the run container's ${key} is the runner's (its keep-alive runs the steps): it cannot be patched`,
        });
    }
  }
  const mounts = container.volumeMounts;
  if (mounts === null && isRun)
    conflicts.push({
      path: [...at, "volumeMounts"],
      message: "the run container's volume mounts are the runner's: they cannot be removed",
    });
  if (!Array.isArray(mounts)) return;
  mounts.forEach((mount, index) => {
    if (isRun && isReplaceItem(mount))
      conflicts.push({
        path: [...at, "volumeMounts", index],
        message: "the run container's volume mounts are the runner's: they cannot be replaced",
      });
    if (!isObject(mount)) return;
    if (typeof mount.name === "string" && RUNNER_VOLUMES.has(mount.name)) {
      conflicts.push({
        path: [...at, "volumeMounts", index, "name"],
        message: `volume "${mount.name}" is the runner's (${[...RUNNER_VOLUMES].join(", ")}): no patch may mount it`,
      });
    }
    if (isRun && typeof mount.mountPath === "string" && RUNNER_MOUNT_PATHS.has(mount.mountPath)) {
      conflicts.push({
        path: [...at, "volumeMounts", index, "mountPath"],
        message: `${mount.mountPath} is where the runner mounts its own volume: it cannot be patched`,
      });
    }
  });
}

/**
 * Every place `patch` (a strategic-merge patch of the run pod's spec) touches what the runner relies on: the run
 * container's command, args and working directory (the keep-alive), its volume mounts, the runner's volumes,
 * restartPolicy, and any removal or replacement of the containers or volumes lists. Empty: the patch is safe to apply.
 */
export function findPatchConflicts(patch: Readonly<Record<string, unknown>>): PatchConflict[] {
  const conflicts: PatchConflict[] = [];
  if (Object.hasOwn(patch, PATCH_DIRECTIVE))
    conflicts.push({
      path: [PATCH_DIRECTIVE],
      message: "the pod spec cannot be replaced whole: patch the keys it needs",
    });
  if (Object.hasOwn(patch, "restartPolicy"))
    conflicts.push({
      path: ["restartPolicy"],
      message: "restartPolicy is the runner's (Never: a restarted container would lose the run's files)",
    });
  // initContainers: a workflow's services run there as native sidecars.
  for (const list of ["containers", "initContainers", "volumes"] as const) {
    const value = patch[list];
    if (value === null) conflicts.push({ path: [list], message: `${list} cannot be removed: the runner's are there` });
    if (!Array.isArray(value)) continue;
    value.forEach((item, index) => {
      if (isReplaceItem(item) && Object.keys(item as object).length === 1)
        conflicts.push({ path: [list, index], message: `${list} cannot be replaced whole: the runner's are there` });
    });
  }
  for (const list of ["containers", "initContainers", "ephemeralContainers"] as const) {
    const value = patch[list];
    if (Array.isArray(value))
      value.forEach((item, index) => isObject(item) && checkContainer(item, [list, index], conflicts));
  }
  const volumes = patch.volumes;
  if (Array.isArray(volumes)) {
    volumes.forEach((volume, index) => {
      if (isObject(volume) && typeof volume.name === "string" && RUNNER_VOLUMES.has(volume.name)) {
        conflicts.push({
          path: ["volumes", index, "name"],
          message: `volume "${volume.name}" is the runner's (${[...RUNNER_VOLUMES].join(", ")}): it cannot be patched`,
        });
      }
    });
  }
  return conflicts;
}
