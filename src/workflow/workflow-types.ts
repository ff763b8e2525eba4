// The types of a workflow file as parsed: what each key said, with where it was said.
import type { EnvVar } from "../core/env-var.js";
import type { ArtifactWhen } from "./artifact-types.js";
import type { KeyTemplate } from "./render-key.js";

/** A place in a workflow file, 1-based like a compiler's `file:line:column`. */
export interface SourcePosition {
  readonly line: number;
  readonly column: number;
}

/**
 * One entry of `when`. Each field is a list of alternatives (a single string in the file is a list of one);
 * `branch` and `tag` are glob patterns. Absent and empty mean the same: nothing listed.
 */
export interface WhenConstraint {
  readonly event: readonly string[];
  readonly branch?: readonly string[];
  readonly tag?: readonly string[];
  /** Glob patterns of changed files: at least one changed file must match one (Tangled's `paths`). */
  readonly paths?: readonly string[];
  /** Pull request actions (opened, reopened, synchronize, closed, merged); absent: opened, reopened, synchronize. */
  readonly types?: readonly string[];
  readonly position?: SourcePosition;
}

/**
 * `kubernetes` runs `image` as it is; `nixery` composes the image from `dependencies.nixpkgs`, as Tangled does;
 * `microvm` maps `image` (a name such as nixos or alpine) to a container image through the runner's configuration.
 */
export type EngineName = "kubernetes" | "nixery" | "microvm";

/** What Nix installs before the first step: a flake installable (`nixpkgs#go`, `github:o/r#x`) or a Nix expression. */
export type NixInstallable =
  { readonly kind: "flake"; readonly ref: string } | { readonly kind: "expression"; readonly expression: string };

/** Packages installed with Nix before the first step, with the flake registry pins and extra binary caches. */
export interface NixSetup {
  readonly installables: readonly NixInstallable[];
  /** `registry:` pins, `nixpkgs: github:nixos/nixpkgs/<rev>`, in file order. */
  readonly registry: ReadonlyArray<{ readonly name: string; readonly ref: string }>;
  /** Tangled's microvm `caches:` map: extra substituters with their public keys, in file order. */
  readonly substituters: ReadonlyArray<{ readonly url: string; readonly key: string }>;
  /** Where `dependencies` (or else `registry`, `caches`) stands: what a problem with the install points at. */
  readonly position: SourcePosition;
}

export interface CloneSettings {
  /** No checkout upload at all. */
  readonly skip: boolean;
  /** How deep the host-side checkout was fetched, as the file says (Tangled fetches depth 1 unless this is more). */
  readonly depth?: number;
  /** Whether the host-side checkout includes submodules; true unless the file says false, as Tangled takes it. */
  readonly submodules: boolean;
  /** Whether the host-side checkout fetched tags; true unless the file says false, as Tangled takes it. */
  readonly tags: boolean;
}

export interface ResourceSettings {
  /** Kubernetes quantities as written: `500m`, `2`, `1.5`. */
  readonly cpu?: string;
  readonly memory?: string;
}

/** Where `resources.cpu` and `resources.memory` stand in the file. */
export interface ResourcePositions {
  readonly cpu?: SourcePosition;
  readonly memory?: SourcePosition;
}

export interface WorkflowStep {
  readonly name: string;
  readonly command: string;
  readonly environment: readonly EnvVar[];
  readonly timeoutMs?: number;
  /** Where the step's map starts. */
  readonly position: SourcePosition;
}

/** A cache key or restore key as written, parsed (src/workflow/render-key.ts); rendered for each run. */
export interface KeyTemplateAt {
  readonly template: KeyTemplate;
  /** Where the template stands, and its key path (`caches[0].restore-keys[1]`): where a problem of rendering it points. */
  readonly position: SourcePosition;
  readonly path: string;
}

/** One `caches:` entry. */
export interface WorkflowCache {
  readonly key: KeyTemplateAt;
  /** Fallback prefixes, in order. */
  readonly restoreKeys: readonly KeyTemplateAt[];
  /** Absolute and normalized pod paths, in file order (a relative one resolved against /work). */
  readonly paths: readonly string[];
  readonly position: SourcePosition;
}

/** One `artifacts:` entry. */
export interface WorkflowArtifact {
  readonly name: string;
  /** Absolute, normalized glob patterns under /outputs or /work (a relative one resolved against /work). */
  readonly paths: readonly string[];
  readonly when: ArtifactWhen;
  readonly required: boolean;
  readonly position: SourcePosition;
}

/** How the runner knows a service is ready: a TCP connection to its port succeeds, or a command exits 0 in its container. */
export type ServiceReadiness =
  { readonly kind: "tcp"; readonly port: number } | { readonly kind: "exec"; readonly command: readonly string[] };

/** One `services:` entry: a container in the run's pod, reachable from the steps on localhost. */
export interface WorkflowService {
  /** A DNS label: the container's name. */
  readonly name: string;
  readonly image: string;
  readonly imagePosition: SourcePosition;
  readonly environment: readonly EnvVar[];
  /** The container's entrypoint and arguments, word by word; absent: the image's own. */
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly ports: readonly number[];
  /** Absent: ready once its container runs. */
  readonly readiness?: ServiceReadiness;
  /** How long it may take to become ready, from the pod running. */
  readonly readinessTimeoutMs: number;
  readonly position: SourcePosition;
}

/** A workflow file that parsed without errors. */
export interface Workflow {
  /** The file name as given to the parser, used in every message and step source. */
  readonly file: string;
  /** Absent: no `when` (or an empty one), which always matches. */
  readonly when?: readonly WhenConstraint[];
  readonly engine: EngineName;
  /** What decided the engine: the `engine` key, else `dependencies.nixpkgs` (nixery), else the default (kubernetes). */
  readonly engineFrom: "engine" | "dependencies" | "default";
  /** Where that is: the `engine` key, the `nixpkgs` key, or the top of the file. */
  readonly enginePosition: SourcePosition;
  readonly image?: string;
  /** Where `image` stands: what a microvm image name the runner does not map points at. */
  readonly imagePosition?: SourcePosition;
  readonly timeoutMs?: number;
  /** Where `timeout` stands. */
  readonly timeoutPosition?: SourcePosition;
  /** The shell's words, e.g. ["bash", "-eo", "pipefail"]; absent means the default, `sh -e`. */
  readonly shell?: readonly string[];
  readonly resources: ResourceSettings;
  /** Where the `resources` values stand (empty when the file has none). */
  readonly resourcesAt?: ResourcePositions;
  /** `dependencies.nixpkgs` of a nixery workflow, in order: the Nixery image's packages; absent when none. */
  readonly nixpkgs?: readonly string[];
  /** What Nix installs before the first step (other registries, a microvm NixOS image's dependencies). */
  readonly nix?: NixSetup;
  /** `architecture` (amd64, arm64): the pod's node selector on kubernetes.io/arch. */
  readonly architecture?: string;
  /** `virtualisation: {docker: true}`: a Docker daemon beside the steps; where the key stands. */
  readonly docker?: SourcePosition;
  readonly clone: CloneSettings;
  readonly environment: readonly EnvVar[];
  readonly steps: readonly WorkflowStep[];
  /** `caches:`, in file order; absent when the file has none. */
  readonly caches?: readonly WorkflowCache[];
  /** `artifacts:`, in file order; absent when the file has none. */
  readonly artifacts?: readonly WorkflowArtifact[];
  /** `services:` (our list), in file order; absent when the file has none. */
  readonly services?: readonly WorkflowService[];
}
