// Pure builder of the Pod YAML that `podman kube play` runs for a cluster pod: only what podman honours, images never pulled.

import { join } from "node:path";
import { stringify } from "yaml";
import type { KubeObject } from "./types.js";

/** Looks up a referenced value (secretKeyRef/configMapKeyRef/fieldRef) for env resolution; undefined when missing. */
export type EnvLookup = (kind: "secret" | "configMap" | "field", name: string, key: string) => string | undefined;

export interface PodmanPodInput {
  pod: KubeObject;
  podmanName: string;
  /** Labels added to the podman pod and its containers so the cluster can find (and remove) what it made. */
  extraLabels: Record<string, string>;
  lookup: EnvLookup;
  /** The host directory of each claim the pod's volumes name (local-cluster/claims.ts), bind-mounted as a hostPath. */
  claimDirectories?: Readonly<Record<string, string>>;
  /** Every emptyDir in memory, as `medium: Memory` asks (a bench's node without disk writeback); default false. */
  emptyDirsInMemory?: boolean;
}

export interface PodmanPodPlan {
  yaml: string;
  /** Kubernetes container name -> podman container name. */
  containerNames: Record<string, string>;
  /** The podman volumes kube play will create for the pod's emptyDir volumes (to remove with the pod). */
  volumeNames: string[];
  /** Those of them to create as tmpfs before kube play (`medium: Memory`): kube play would put them on disk. */
  memoryVolumeNames: string[];
  /** Things the local cluster could not honour, for Warning events. */
  warnings: string[];
}

/** The podman container name kube play gives to container `container` of pod `podmanName`. */
export function formatPodmanContainerName(podmanName: string, container: string): string {
  return `${podmanName}-${container}`;
}

function resolveEnv(env: any[] | undefined, lookup: EnvLookup, warnings: string[]): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  for (const e of env ?? []) {
    if (e.value !== undefined || !e.valueFrom) {
      out.push({ name: e.name, value: String(e.value ?? "") });
      continue;
    }
    const from = e.valueFrom;
    const ref = from.secretKeyRef
      ? (["secret", from.secretKeyRef] as const)
      : from.configMapKeyRef
        ? (["configMap", from.configMapKeyRef] as const)
        : undefined;
    let value: string | undefined;
    if (ref)
      value = ref[0] === "secret" || ref[0] === "configMap" ? lookup(ref[0], ref[1].name, ref[1].key) : undefined;
    else if (from.fieldRef) value = lookup("field", "", from.fieldRef.fieldPath);
    if (value === undefined) warnings.push(`env ${e.name}: valueFrom could not be resolved; left empty`);
    out.push({ name: e.name, value: value ?? "" });
  }
  return out;
}

/**
 * podman 4.3's kube play turns an emptyDir into a named volume called by the volume's name, shared by every pod
 * that uses that name: two runs would see each other's /work. Each pod's volumes are therefore named
 * `<podman pod name>-<volume name>`, so every pod gets fresh ones (the kubelet removes them after the pod).
 */
export function formatPodmanVolumeName(podmanName: string, volumeName: string): string {
  return `${podmanName}-${volumeName}`;
}

function convertVolumes(
  podmanName: string,
  volumes: any[] | undefined,
  claimDirectories: Readonly<Record<string, string>>,
  warnings: string[],
): object[] {
  return (volumes ?? []).map((v) => {
    const name = formatPodmanVolumeName(podmanName, v.name);
    const claim = v.persistentVolumeClaim?.claimName;
    if (claim !== undefined && claimDirectories[claim] !== undefined)
      return { name, hostPath: { path: claimDirectories[claim], type: "Directory" } };
    if (!v.emptyDir)
      warnings.push(
        `volume ${v.name}: only emptyDir and persistentVolumeClaim are supported locally; mounted as an empty directory`,
      );
    return { name, emptyDir: {} };
  });
}

/** The securityContext keys podman 4.3's kube play honours (capabilities, no_new_privs, users, seccomp, privileged). */
const CONTAINER_SECURITY_KEYS = [
  "privileged",
  "allowPrivilegeEscalation",
  "capabilities",
  "runAsUser",
  "runAsGroup",
  "runAsNonRoot",
  "readOnlyRootFilesystem",
  "seccompProfile",
];
const POD_SECURITY_KEYS = ["runAsUser", "runAsGroup", "runAsNonRoot", "seccompProfile"];

/** The keys of a securityContext podman honours; the others become warnings. Undefined when nothing is left. */
function pickSecurityContext(
  context: Record<string, unknown> | undefined,
  keys: readonly string[],
  where: string,
  warnings: string[],
): Record<string, unknown> | undefined {
  if (context === undefined) return undefined;
  const picked: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(context)) {
    if (keys.includes(key)) picked[key] = value;
    else warnings.push(`${where} securityContext.${key} is not honoured by the local cluster`);
  }
  return Object.keys(picked).length > 0 ? picked : undefined;
}

/** A volumeMount's subPath as the API server accepts it: relative, no `..` element. */
export function isSafeSubPath(subPath: string): boolean {
  return !subPath.startsWith("/") && !subPath.split("/").includes("..");
}

/** A pod's native sidecars: init containers with restartPolicy Always, which start before its containers and keep running. */
export function listSidecars(spec: any): any[] {
  return (spec?.initContainers ?? []).filter((c: any) => c.restartPolicy === "Always");
}

/**
 * The containers the kubelet runs for the whole pod, in start order: native sidecars first (kube play starts a pod's
 * containers in order), then the containers. Plain init containers are not among them.
 */
export function listLongRunningContainers(spec: any): any[] {
  return [...listSidecars(spec), ...(spec?.containers ?? [])];
}

export function buildPodmanPod(input: PodmanPodInput): PodmanPodPlan {
  const { pod, podmanName } = input;
  const warnings: string[] = [];
  const containerNames: Record<string, string> = {};
  const spec = pod.spec ?? {};
  const claimDirectories = input.claimDirectories ?? {};
  const readOnlyClaims = new Set<string>(
    (spec.volumes ?? []).filter((v: any) => v.persistentVolumeClaim?.readOnly).map((v: any) => v.name),
  );
  const claimOfVolume = new Map<string, string>(
    (spec.volumes ?? []).flatMap((v: any) =>
      claimDirectories[v.persistentVolumeClaim?.claimName] === undefined
        ? []
        : [[v.name, claimDirectories[v.persistentVolumeClaim.claimName]!]],
    ),
  );
  /** A claim mounted with a subPath becomes a hostPath volume of its own at that directory (the kubelet made it). */
  const subPathVolumes: object[] = [];
  // Probes are the kubelet's (local-cluster/prober.ts), not podman's: none reaches kube play.
  const containers = listLongRunningContainers(spec).map((c: any) => {
    containerNames[c.name] = formatPodmanContainerName(podmanName, c.name);
    const securityContext = pickSecurityContext(
      c.securityContext,
      CONTAINER_SECURITY_KEYS,
      `container ${c.name}:`,
      warnings,
    );
    return {
      name: c.name,
      image: c.image,
      imagePullPolicy: "IfNotPresent",
      ...(c.command ? { command: c.command } : {}),
      ...(c.args ? { args: c.args } : {}),
      ...(c.workingDir ? { workingDir: c.workingDir } : {}),
      env: resolveEnv(c.env, input.lookup, warnings),
      ...(c.resources && Object.keys(c.resources).length > 0 ? { resources: c.resources } : {}),
      volumeMounts: (c.volumeMounts ?? []).map((m: any) => {
        let name = formatPodmanVolumeName(podmanName, m.name);
        const claimDir = claimOfVolume.get(m.name);
        if (typeof m.subPath === "string" && m.subPath !== "") {
          if (claimDir === undefined || !isSafeSubPath(m.subPath))
            warnings.push(
              `container ${c.name}: the subPath ${JSON.stringify(m.subPath)} of volume ${m.name} is not honoured by the local cluster (only a relative one, without .., on a claim); the whole volume is mounted`,
            );
          else {
            name = formatPodmanVolumeName(podmanName, `${m.name}-sub${subPathVolumes.length}`);
            subPathVolumes.push({ name, hostPath: { path: join(claimDir, m.subPath), type: "Directory" } });
          }
        }
        return {
          name,
          mountPath: m.mountPath,
          ...(m.readOnly || readOnlyClaims.has(m.name) ? { readOnly: true } : {}),
        };
      }),
      ...(securityContext ? { securityContext } : {}),
      ...(c.stdin ? { stdin: true } : {}),
      ...(c.tty ? { tty: true } : {}),
    };
  });
  const podSecurityContext = pickSecurityContext(spec.securityContext, POD_SECURITY_KEYS, "pod", warnings);
  const hostname = pod.metadata.name.length <= 63 ? pod.metadata.name : pod.metadata.name.slice(0, 63);
  const manifest = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: podmanName, labels: { ...(pod.metadata.labels ?? {}), ...input.extraLabels } },
    spec: {
      hostname,
      restartPolicy:
        spec.restartPolicy === "Always" ? "Always" : spec.restartPolicy === "OnFailure" ? "OnFailure" : "Never",
      terminationGracePeriodSeconds: spec.terminationGracePeriodSeconds ?? 30,
      ...(podSecurityContext ? { securityContext: podSecurityContext } : {}),
      volumes: [...convertVolumes(podmanName, spec.volumes, claimDirectories, warnings), ...subPathVolumes],
      containers,
    },
  };
  if ((spec.initContainers ?? []).length > listSidecars(spec).length)
    warnings.push("initContainers other than native sidecars (restartPolicy: Always) are not run by the local cluster");
  // A claim's directory outlives the pod: only the emptyDirs are podman volumes to remove with it.
  const local = (spec.volumes ?? []).filter(
    (v: any) => claimDirectories[v.persistentVolumeClaim?.claimName] === undefined,
  );
  const volumeNames = local.map((v: any) => formatPodmanVolumeName(podmanName, v.name));
  const memoryVolumeNames = local
    .filter((v: any) => v.emptyDir && (input.emptyDirsInMemory || v.emptyDir.medium === "Memory"))
    .map((v: any) => formatPodmanVolumeName(podmanName, v.name));
  return { yaml: stringify(manifest), containerNames, volumeNames, memoryVolumeNames, warnings };
}
