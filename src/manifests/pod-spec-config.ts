// The operator's pod keys that reach the run pod's spec (and the warm placeholders'): what the manifests build from,
// whether the runner config file or a library caller set them.

/** `pod.security`: `default` (root with few capabilities, README "Hardening") or `restricted` (Pod Security Standard "restricted"). */
export type PodSecurityProfile = "default" | "restricted";

/** A toleration as the pod spec takes it (validated against the Kubernetes schema when read). */
export interface PodToleration {
  readonly key?: string;
  readonly operator?: "Exists" | "Equal";
  readonly value?: string;
  readonly effect?: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
  readonly tolerationSeconds?: number;
}

/**
 * The operator's pod keys that reach the pod spec (and, for placement, the warm placeholders): what the runner config
 * file's `pod` says, and what a library caller passes as `settings.pod` (RunSettingsInput.pod).
 */
export interface PodSpecConfig {
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly tolerations?: readonly PodToleration[];
  /** A pod affinity as the pod spec takes it (`nodeAffinity`, `podAffinity`, `podAntiAffinity`), schema-checked. */
  readonly affinity?: Readonly<Record<string, unknown>>;
  readonly priorityClassName?: string;
  /** The pod's RuntimeClass for every run; the microvm engine's own `runtimeClassName` wins for its runs. */
  readonly runtimeClassName?: string;
  /** Added to the Job's and the pod's labels; never one of the runner's own (refused when read). */
  readonly labels?: Readonly<Record<string, string>>;
  /** Added to the Job's and the pod's annotations; never one of the runner's own (refused when read). */
  readonly annotations?: Readonly<Record<string, string>>;
  /** Names of Secrets (of type dockerconfigjson) in the run's namespace that the kubelet pulls with; the runner never reads them. */
  readonly imagePullSecrets?: readonly string[];
  /** Absent: `default`. */
  readonly security?: PodSecurityProfile;
  /**
   * A strategic-merge patch of the pod spec, applied last (manifests/strategic-merge.ts); it never touches what the
   * runner relies on (checked when read: findPatchConflicts).
   */
  readonly podSpecPatch?: Readonly<Record<string, unknown>>;
}

/** PodSpecConfig's keys, in the order the manifest and the dry run take them. */
export const POD_SPEC_CONFIG_KEYS = [
  "nodeSelector",
  "tolerations",
  "affinity",
  "priorityClassName",
  "runtimeClassName",
  "labels",
  "annotations",
  "imagePullSecrets",
  "security",
  "podSpecPatch",
] as const satisfies ReadonlyArray<keyof PodSpecConfig>;
