// The operator's runner configuration (`--config FILE`): its typed shape and the defaults every key has.
import type { PodSpecConfig } from "../manifests/pod-spec-config.js";

/** One name a workflow's `image` may give on the microvm engine, mapped to a container image. */
export interface MicrovmImage {
  /** The container image the run's pod runs. */
  readonly image: string;
  /**
   * Whether it is a NixOS-like image with Nix (Tangled's "NixOS images"): only there are `dependencies`, `registry`,
   * `caches` and `virtualisation` honoured, by installing with Nix before the first step.
   */
  readonly nix: boolean;
}

/** `engines.microvm`: how Tangled's microVM engine runs here, as a pod. */
export interface MicrovmEngineConfig {
  /** Image names (`image: nixos`) to container images; a name not listed is refused, naming the ones that are. */
  readonly images: Readonly<Record<string, MicrovmImage>>;
  /** The name used when a workflow gives no `image` (Tangled's SPINDLE_MICROVM_PIPELINES_DEFAULT_IMAGE). */
  readonly defaultImage: string;
  /** The pod's runtimeClassName (Kata Containers, gVisor) for VM-like isolation; absent: the cluster's default runtime. */
  readonly runtimeClassName?: string;
}

/** `virtualisation: {docker: true}`: a Docker daemon beside the steps. */
export interface DockerDaemonConfig {
  /** The daemon's image, run privileged in the run's pod. */
  readonly image: string;
}

/** `limits`: what a workflow may ask for (README, "Limits"). */
export interface RunnerLimits {
  /** The most cpu a workflow's `resources.cpu` may ask for (a Kubernetes quantity). */
  readonly maxCpu?: string;
  readonly maxMemory?: string;
  /** The longest `timeout` a workflow or one of its steps may set; also the run's timeout when the workflow sets none. */
  readonly maxTimeoutMs?: number;
  /** Glob patterns (`*` within a path segment, `**` across them) a workflow's own `image` must match. */
  readonly images?: readonly string[];
  /**
   * Patterns (as `images`) the Nixery registry of a nixery workflow must match (`--nixery`, serve's): the composed
   * image is pulled from it. Absent: any registry, but then a set `images` holds the composed image instead.
   */
  readonly nixery?: readonly string[];
  /** Over a limit: refuse the workflow (bad input, exit 2) or clamp it to the limit with a warning. */
  readonly onExceed: "refuse" | "clamp";
}

/** Ephemeral storage (the node's disk: writable layer, emptyDirs, logs) of the run container, as quantities. */
export interface EphemeralStorage {
  /** What the scheduler reserves on the node. */
  readonly request?: string;
  /** Past it the kubelet evicts the pod (the run fails as infrastructure: the pod was lost). */
  readonly limit?: string;
}

/** `pod`: settings of the run's pod that are the operator's, not the workflow's. */
export interface PodConfig extends PodSpecConfig {
  /** Absent: none (the node's disk is shared without bound, as the cluster's defaults say). */
  readonly ephemeralStorage?: EphemeralStorage;
  /**
   * A PodDisruptionBudget (maxUnavailable 0) per run, so that a node drain waits for the run rather than evicting its
   * pod. Absent: true.
   */
  readonly disruptionBudget?: boolean;
}

/**
 * The runner's configuration. Each section is a key of the file; sections other issues add (`pod`, `limits`) sit
 * beside these, so the file grows by keys, never by a new shape.
 */
export interface RunnerConfig {
  readonly engines: { readonly microvm: MicrovmEngineConfig };
  /** Whether a workflow may run a privileged container (the Docker daemon of `virtualisation.docker`). Default false. */
  readonly allowPrivileged: boolean;
  readonly docker: DockerDaemonConfig;
  readonly limits: RunnerLimits;
  readonly pod: PodConfig;
}

/** What every key is when the file does not say (README, "Runner configuration"). */
export const DEFAULT_RUNNER_CONFIG: RunnerConfig = {
  engines: {
    microvm: {
      images: {
        nixos: { image: "docker.io/nixos/nix:2.28.4", nix: true },
        alpine: { image: "docker.io/library/alpine:3.22", nix: false },
        almalinux10: { image: "docker.io/library/almalinux:10", nix: false },
      },
      defaultImage: "nixos",
    },
  },
  allowPrivileged: false,
  docker: { image: "docker.io/library/docker:28-dind" },
  limits: { onExceed: "refuse" },
  pod: {},
};

/** Where the config came from, for messages that name a setting (`allowPrivileged in ops.yml`). */
export interface RunnerConfigSource {
  readonly config: RunnerConfig;
  /** The file given with --config; absent: the defaults. */
  readonly file?: string;
  /** The `pod` keys a command-line flag set over the file (src/cli/pod-options.ts), for messages that name their source. */
  readonly podFlags?: ReadonlyArray<keyof PodConfig>;
}

/** How a message names a setting: `allowPrivileged: true in --config ops.yml`, or `... in a --config file` without one. */
export function describeSetting(source: RunnerConfigSource, setting: string): string {
  return `${setting} in ${source.file === undefined ? "a --config file" : `--config ${source.file}`}`;
}
