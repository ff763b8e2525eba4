// Turns a parsed workflow and the runner's own settings into what a run needs: image, shell, budgets, env, steps.
import { IMAGE } from "../core/patterns.js";
import {
  DEFAULT_RUNNER_CONFIG,
  describeSetting,
  type EphemeralStorage,
  type RunnerConfigSource,
} from "../config/runner-config.js";
import { applyLimits, type LimitClamp } from "./apply-limits.js";
import { buildNixInstallScript, NIX_INSTALL_STEP_NAME } from "../pod/nix-install.js";
import { makeIssue, type WorkflowIssue } from "../workflow/workflow-errors.js";
import type {
  CloneSettings,
  EngineName,
  ResourceSettings,
  WhenConstraint,
  Workflow,
  WorkflowArtifact,
  WorkflowCache,
  WorkflowService,
} from "../workflow/workflow-types.js";
import type { EnvVar } from "../core/env-var.js";

/** The shell a step's script runs in when the workflow names none: stops at the first failing command. */
export const DEFAULT_SHELL: readonly string[] = ["sh", "-e"];

/** What Tangled's nixery engine adds after the workflow's packages, in this order (spindle/engines/nixery/engine.go). */
export const NIXERY_DEFAULT_PACKAGES: readonly string[] = ["bash", "git", "coreutils", "nix"];

/**
 * What the runner's in-pod helper needs beyond Tangled's defaults, appended after them (each unless the path names
 * it already). A Nixery image holds only the named packages' own programs, and bash, git, coreutils and nix bring no
 * `tar` (the upload and the outputs), `find` (their entry counts), `grep` (a timeout's search for the step's
 * processes) or `setsid` (each step in its own session, util-linux): without them every run would fail at the upload.
 */
export const NIXERY_RUNNER_PACKAGES: readonly string[] = ["gnutar", "findutils", "gnugrep", "util-linux"];

/** The longest repository name container runtimes pull (distribution/reference's NameTotalLengthMax). */
const MAX_IMAGE_NAME_LENGTH = 255;

export interface ResolveOptions {
  /** The runner's Nixery registry (`--nixery`), e.g. nixery.dev or registry.example:5000/nixery. */
  readonly nixeryBase?: string;
  /** The operator's configuration (`--config`): microvm images, privileged containers; absent: the defaults. */
  readonly runner?: RunnerConfigSource;
}

/** Where the run's pod may go and how it runs: from `architecture` and the microvm engine's configuration. */
export interface Placement {
  /** `kubernetes.io/arch` from the workflow's `architecture`. */
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly runtimeClassName?: string;
}

export interface ResolvedStep {
  readonly name: string;
  readonly command: string;
  /** The step's own variables, in file order; they are set after (over) the workflow's. */
  readonly env: readonly EnvVar[];
  readonly timeoutMs?: number;
  /** `file:line` of the step's declaration. */
  readonly source: string;
}

export interface ResolvedWorkflow {
  readonly file: string;
  readonly engine: EngineName;
  /** The run's image: the file's `image`, else the composed Nixery image, else undefined (the runner's default). */
  readonly image?: string;
  /** `microvm`: the workflow's `image` (or the configured default) is a name the runner configuration maps (`imageName`). */
  readonly imageFrom: "workflow" | "nixery" | "microvm" | "default";
  readonly imageName?: string;
  readonly placement: Placement;
  /** `virtualisation.docker`, allowed by the configuration: a privileged Docker daemon beside the steps. */
  readonly dockerDaemon?: { readonly image: string };
  /** The run container's ephemeral storage (`pod.ephemeralStorage` of the configuration); absent: none. */
  readonly ephemeralStorage?: EphemeralStorage;
  /** The shell's words; each step runs as these words followed by the path of its script. */
  readonly shell: readonly string[];
  readonly timeoutMs?: number;
  /** `limits.maxTimeout`: the run's timeout when neither the workflow nor a flag sets one and the default is longer. */
  readonly maxTimeoutMs?: number;
  readonly resources: ResourceSettings;
  /** What `limits` clamped (onExceed: clamp), at the values' positions; empty when nothing was. */
  readonly clamped: readonly WorkflowIssue[];
  /** The same clamps as data (the result's `workflow.clamped`); absent when nothing was clamped. */
  readonly clamps?: readonly LimitClamp[];
  /** The workflow-level variables, in file order. */
  readonly env: readonly EnvVar[];
  readonly clone: CloneSettings;
  readonly when?: readonly WhenConstraint[];
  readonly steps: readonly ResolvedStep[];
  /** As parsed; their keys are rendered for each run (src/settings/plan-workflow-run.ts). Absent: none. */
  readonly caches?: readonly WorkflowCache[];
  readonly artifacts?: readonly WorkflowArtifact[];
  /** `services:`, in file order (their images held to `limits.images` like the run's); absent: none. */
  readonly services?: readonly WorkflowService[];
}

export type ResolveResult =
  | { readonly ok: true; readonly workflow: ResolvedWorkflow }
  | { readonly ok: false; readonly errors: readonly WorkflowIssue[] };

const NIXERY_BASE = /^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:\d{1,5})?(\/[A-Za-z0-9._-]+)*$/;

/**
 * A Nixery base as an image reference starts: `https://nixery.dev/` → `nixery.dev` (the scheme and trailing
 * slashes go: the container runtime picks the protocol). Undefined when it is not a registry host with an optional
 * port and path.
 */
export function normalizeNixeryBase(text: string): string | undefined {
  const base = text
    .trim()
    .replace(/^https?:\/\//, "")
    .replace(/\/+$/, "");
  return NIXERY_BASE.test(base) ? base : undefined;
}

/**
 * The image Tangled's nixery engine would pull, plus what the runner's helper needs: the base, the workflow's
 * nixpkgs packages in their order, then bash, git, coreutils and nix, then those of NIXERY_RUNNER_PACKAGES the path
 * does not name yet, joined by `/`. Like Tangled it keeps duplicates in its own part (a package listed twice, or one
 * of the defaults listed again, stays in the path). Tangled also prefixes `arm64/` on an arm64 spindle; the runner
 * cannot know its nodes' architecture, so it does not.
 */
export function composeNixeryImage(base: string, packages: readonly string[]): string {
  const tangled = [...packages, ...NIXERY_DEFAULT_PACKAGES];
  return [base, ...tangled, ...NIXERY_RUNNER_PACKAGES.filter((name) => !tangled.includes(name))].join("/");
}

type ImageChoice = {
  image?: string;
  imageFrom: ResolvedWorkflow["imageFrom"];
  imageName?: string;
  nix?: boolean;
  nixeryBase?: string;
};

/** A microvm `image` is a name: the configuration's image for it, or the issue naming the names there are. */
function resolveMicrovmImage(workflow: Workflow, source: RunnerConfigSource): ImageChoice | WorkflowIssue {
  const microvm = source.config.engines.microvm;
  const name = workflow.image ?? microvm.defaultImage;
  const mapped = Object.hasOwn(microvm.images, name) ? microvm.images[name] : undefined;
  if (mapped === undefined) {
    return makeIssue(
      workflow.file,
      workflow.imagePosition ?? workflow.enginePosition,
      workflow.image !== undefined ? "image" : "engine",
      `the microvm image ${JSON.stringify(name)} is not one this runner maps to a container image (${Object.keys(microvm.images).join(", ")}); add it under ${describeSetting(source, "engines.microvm.images")}`,
    );
  }
  return { image: mapped.image, imageFrom: "microvm", imageName: name, nix: mapped.nix };
}

/** The image and where it came from, or the issue that prevents one. */
function resolveImage(workflow: Workflow, options: ResolveOptions): ImageChoice | WorkflowIssue {
  if (workflow.engine === "microvm")
    return resolveMicrovmImage(workflow, options.runner ?? { config: DEFAULT_RUNNER_CONFIG });
  if (workflow.image !== undefined) return { image: workflow.image, imageFrom: "workflow" };
  if (workflow.engine !== "nixery") return { imageFrom: "default" };
  const path = workflow.engineFrom === "dependencies" ? "dependencies.nixpkgs" : "engine";
  const what =
    workflow.engineFrom === "dependencies"
      ? "lists nixpkgs packages, so this is a nixery workflow, whose image"
      : "a nixery workflow's image";
  if (options.nixeryBase === undefined) {
    return makeIssue(
      workflow.file,
      workflow.enginePosition,
      path,
      `${what} is composed on the runner's Nixery registry: pass --nixery URL (e.g. --nixery nixery.dev), or set \`image\` in the workflow`,
    );
  }
  const base = normalizeNixeryBase(options.nixeryBase);
  if (base === undefined)
    return makeIssue(
      workflow.file,
      workflow.enginePosition,
      path,
      `the Nixery registry ${JSON.stringify(options.nixeryBase)} is not a registry host such as nixery.dev or registry.example:5000/nixery`,
    );
  const image = composeNixeryImage(base, workflow.nixpkgs ?? []);
  const name = image.replace(/:[^/]*$/, "");
  if (name.length > MAX_IMAGE_NAME_LENGTH || !IMAGE.test(image)) {
    return makeIssue(
      workflow.file,
      workflow.enginePosition,
      path,
      `the composed Nixery image name is ${name.length} characters long, more than the ${MAX_IMAGE_NAME_LENGTH} an image name may have; list fewer packages or set \`image\``,
    );
  }
  return { image, imageFrom: "nixery", nixeryBase: base };
}

/**
 * Resolves a parsed workflow against the runner's settings. Pure: the CLI decides what overrides what (its flags
 * over these fields over its defaults); an undefined field here means "the file does not say".
 */
export function resolveWorkflow(workflow: Workflow, options: ResolveOptions = {}): ResolveResult {
  const source = options.runner ?? { config: DEFAULT_RUNNER_CONFIG };
  const chosen = resolveImage(workflow, options);
  if ("message" in chosen) return { ok: false, errors: [chosen] };
  const { nix: nixImage, nixeryBase, ...image } = chosen;
  const errors: WorkflowIssue[] = [];
  if (nixImage === false) {
    // Tangled ignores these on a non-NixOS image; a run without the packages it asked for would only fail later.
    if (workflow.nix !== undefined)
      errors.push(
        makeIssue(
          workflow.file,
          workflow.nix.position,
          "dependencies",
          `are installed with Nix on a NixOS image only, and the microvm image ${JSON.stringify(image.imageName)} is not one; install them in a step (apk add, dnf install), or use a NixOS image`,
        ),
      );
    if (workflow.docker !== undefined)
      errors.push(
        makeIssue(
          workflow.file,
          workflow.docker,
          "virtualisation.docker",
          `configures a NixOS image, and the microvm image ${JSON.stringify(image.imageName)} is not one; use a NixOS image`,
        ),
      );
  }
  if (workflow.docker !== undefined && !source.config.allowPrivileged) {
    errors.push(
      makeIssue(
        workflow.file,
        workflow.docker,
        "virtualisation.docker",
        `needs a privileged container (the Docker daemon), which this runner does not allow; the operator allows it with ${describeSetting(source, "allowPrivileged: true")}`,
      ),
    );
  }
  if (workflow.docker !== undefined && source.config.allowPrivileged && source.config.pod.security === "restricted") {
    errors.push(
      makeIssue(
        workflow.file,
        workflow.docker,
        "virtualisation.docker",
        `needs a privileged container (the Docker daemon), which ${source.podFlags?.includes("security") ? "--security-profile restricted" : describeSetting(source, "pod.security: restricted")} forbids (Pod Security Standard "restricted"); use a runner configured with the default profile`,
      ),
    );
  }
  const limited = applyLimits(
    workflow,
    source,
    nixeryBase !== undefined && image.image !== undefined ? { base: nixeryBase, image: image.image } : undefined,
  );
  errors.push(...limited.errors);
  const installStep =
    workflow.nix !== undefined && nixImage !== false
      ? [
          {
            name: NIX_INSTALL_STEP_NAME,
            command: buildNixInstallScript(workflow.nix),
            env: [],
            source: `${workflow.file}:${workflow.nix.position.line}`,
          },
        ]
      : [];
  const clash = installStep.length > 0 ? workflow.steps.find((step) => step.name === NIX_INSTALL_STEP_NAME) : undefined;
  if (clash)
    errors.push(
      makeIssue(
        workflow.file,
        clash.position,
        "steps",
        `the step name ${JSON.stringify(NIX_INSTALL_STEP_NAME)} is the runner's own step that installs the dependencies; rename this one`,
      ),
    );
  if (errors.length > 0) return { ok: false, errors };
  const runtimeClassName = workflow.engine === "microvm" ? source.config.engines.microvm.runtimeClassName : undefined;
  return {
    ok: true,
    workflow: {
      file: workflow.file,
      engine: workflow.engine,
      ...image,
      placement: {
        ...(workflow.architecture !== undefined
          ? { nodeSelector: { "kubernetes.io/arch": workflow.architecture } }
          : {}),
        ...(runtimeClassName !== undefined ? { runtimeClassName } : {}),
      },
      ...(workflow.docker !== undefined ? { dockerDaemon: { image: source.config.docker.image } } : {}),
      ...(source.config.pod.ephemeralStorage !== undefined
        ? { ephemeralStorage: source.config.pod.ephemeralStorage }
        : {}),
      shell: workflow.shell ?? DEFAULT_SHELL,
      ...(limited.timeoutMs !== undefined ? { timeoutMs: limited.timeoutMs } : {}),
      ...(source.config.limits.maxTimeoutMs !== undefined ? { maxTimeoutMs: source.config.limits.maxTimeoutMs } : {}),
      resources: limited.resources,
      clamped: limited.clamped,
      ...(limited.clamps.length > 0 ? { clamps: limited.clamps } : {}),
      env: workflow.environment,
      clone: workflow.clone,
      ...(workflow.when !== undefined ? { when: workflow.when } : {}),
      steps: [
        ...installStep,
        ...workflow.steps.map((step, index) => ({
          name: step.name,
          command: step.command,
          env: step.environment,
          ...(limited.stepTimeoutsMs[index] !== undefined ? { timeoutMs: limited.stepTimeoutsMs[index] } : {}),
          source: `${workflow.file}:${step.position.line}`,
        })),
      ],
      ...(workflow.caches !== undefined ? { caches: workflow.caches } : {}),
      ...(workflow.artifacts !== undefined ? { artifacts: workflow.artifacts } : {}),
      ...(workflow.services !== undefined ? { services: workflow.services } : {}),
    },
  };
}
