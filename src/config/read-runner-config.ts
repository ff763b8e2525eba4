// Reads the runner configuration file (`--config FILE`): YAML checked key by key, every problem at its file:line:column.
import { parseQuantity } from "../core/quantity.js";
import { IMAGE, QUANTITY } from "../core/patterns.js";
import {
  field,
  readBoolean,
  readDurationMs,
  readEntries,
  readList,
  readMap,
  readMatching,
  readNonEmptyText,
  type FieldReader,
} from "../workflow/field-readers.js";
import { readBoundedQuantity } from "../workflow/workflow-schema.js";
import {
  isMapNode,
  isNullValue,
  positionAt,
  reportError,
  resolveAlias,
  type ReadContext,
} from "../workflow/read-context.js";
import { readWorkflowFile } from "../workflow/read-workflow-file.js";
import { makeIssue, sortIssues, WorkflowError } from "../workflow/workflow-errors.js";
import { buildPodSpecKeys, loadPodSchemas, UNUSED_POD_SCHEMAS, type PodSchemas } from "./read-pod-config.js";
import {
  DEFAULT_RUNNER_CONFIG,
  type MicrovmImage,
  type RunnerConfig,
  type RunnerConfigSource,
  type RunnerLimits,
} from "./runner-config.js";
import { POD_SPEC_CONFIG_KEYS, type PodSpecConfig } from "../manifests/pod-spec-config.js";

const readImage = readMatching(IMAGE, "a container image reference such as alpine:3.22");
/** A Kubernetes object name (DNS-1123 subdomain), as runtimeClassName takes it. */
const readObjectName = readMatching(
  /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/,
  "a RuntimeClass name such as kata or gvisor",
);

/** `images`: name → image (`alpine: alpine:3.22`, no Nix) or `{image, nix}`. */
const readImages: FieldReader<Record<string, MicrovmImage>> = (ctx, node, at, path) => {
  const images: Record<string, MicrovmImage> = {};
  const position = readEntries(
    ctx,
    node,
    at,
    path,
    "a map of image names to container images, such as alpine: alpine:3.22",
    ({ key, keyAt, keyPath, value, valueAt }) => {
      if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(key)) {
        reportError(
          ctx,
          keyAt,
          keyPath,
          `expected an image name of letters, digits, '.', '_' and '-', found ${JSON.stringify(key)}`,
        );
        return;
      }
      if (isMapNode(ctx, resolveAlias(ctx, value))) {
        const read = readMap(
          ctx,
          value,
          valueAt,
          keyPath,
          { image: field(readImage, { required: true }), nix: field(readBoolean) },
          "a map such as {image: nixos/nix:2.28.4, nix: true}",
        );
        if (read?.values.image !== undefined) images[key] = { image: read.values.image, nix: read.values.nix ?? false };
        return;
      }
      const image = readImage(ctx, value, valueAt, keyPath);
      if (image !== undefined) images[key] = { image, nix: false };
    },
  );
  return position === undefined ? undefined : images;
};

const MICROVM_KEYS = {
  images: field(readImages),
  defaultImage: field(readNonEmptyText),
  runtimeClassName: field(readObjectName),
};
const ENGINES_KEYS = {
  microvm: field((ctx: ReadContext, node: unknown, at, path) =>
    readMap(ctx, node, at, path, MICROVM_KEYS, "a map such as {images: {alpine: alpine:3.22}, runtimeClassName: kata}"),
  ),
};
const DOCKER_KEYS = { image: field(readImage) };
const readOnExceed = readMatching(/^(refuse|clamp)$/, "refuse or clamp") as FieldReader<"refuse" | "clamp">;
/** An image glob: what an image reference may hold, plus `*`. */
const readImagePattern = readMatching(
  /^[A-Za-z0-9*][A-Za-z0-9._\-/:@*]{0,1023}$/,
  "an image pattern such as docker.io/library/* or registry.example/ci/**",
);
const readImagePatterns: FieldReader<string[]> = (ctx, node, at, path) =>
  readList(ctx, node, at, path, "a list of image patterns such as [docker.io/library/*]", readImagePattern);
const LIMITS_KEYS = {
  maxCpu: field(readBoundedQuantity("cpu")),
  maxMemory: field(readBoundedQuantity("memory")),
  maxTimeout: field(readDurationMs),
  images: field(readImagePatterns),
  nixery: field((ctx: ReadContext, node: unknown, at, path) =>
    readList(
      ctx,
      node,
      at,
      path,
      "a list of registry patterns such as [nixery.dev, registry.example:5000/nixery]",
      readImagePattern,
    ),
  ),
  onExceed: field(readOnExceed),
};
const readStorage = readMatching(QUANTITY, "a Kubernetes quantity such as 10Gi");
const EPHEMERAL_STORAGE_KEYS = { request: field(readStorage), limit: field(readStorage) };
/** The file's keys; `schemas` check `pod.affinity` and `pod.podSpecPatch` (loaded only when the file has them). */
const buildConfigKeys = (schemas: PodSchemas) => {
  const podKeys = {
    ephemeralStorage: field((ctx: ReadContext, node: unknown, at, path) =>
      readMap(ctx, node, at, path, EPHEMERAL_STORAGE_KEYS, "a map such as {request: 2Gi, limit: 10Gi}"),
    ),
    disruptionBudget: field(readBoolean),
    ...buildPodSpecKeys(schemas),
  };
  return {
    engines: field((ctx: ReadContext, node: unknown, at, path) =>
      readMap(ctx, node, at, path, ENGINES_KEYS, "a map of engine names to their settings, such as microvm"),
    ),
    allowPrivileged: field(readBoolean),
    docker: field((ctx: ReadContext, node: unknown, at, path) =>
      readMap(ctx, node, at, path, DOCKER_KEYS, "a map such as {image: docker:28-dind}"),
    ),
    pod: field((ctx: ReadContext, node: unknown, at, path) =>
      readMap(
        ctx,
        node,
        at,
        path,
        podKeys,
        "a map of pod settings such as nodeSelector, tolerations and ephemeralStorage",
      ),
    ),
    limits: field((ctx: ReadContext, node: unknown, at, path) =>
      readMap(ctx, node, at, path, LIMITS_KEYS, "a map such as {maxCpu: 4, maxMemory: 8Gi, onExceed: refuse}"),
    ),
  };
};

/** `limits` as read, onto the default (`onExceed: refuse`, no limit). */
function readLimits(
  values:
    | {
        maxCpu?: string;
        maxMemory?: string;
        maxTimeout?: number;
        images?: string[];
        nixery?: string[];
        onExceed?: "refuse" | "clamp";
      }
    | undefined,
): RunnerLimits {
  return {
    ...(values?.maxCpu !== undefined ? { maxCpu: values.maxCpu } : {}),
    ...(values?.maxMemory !== undefined ? { maxMemory: values.maxMemory } : {}),
    ...(values?.maxTimeout !== undefined ? { maxTimeoutMs: values.maxTimeout } : {}),
    ...(values?.images !== undefined ? { images: values.images } : {}),
    ...(values?.nixery !== undefined ? { nixery: values.nixery } : {}),
    onExceed: values?.onExceed ?? DEFAULT_RUNNER_CONFIG.limits.onExceed,
  };
}

/** The pod keys that were set, in a fixed order (the dry run and the manifest read them as they are). */
function readPodSpecConfig(values: Partial<Record<keyof PodSpecConfig, unknown>> | undefined): PodSpecConfig {
  const config: Record<string, unknown> = {};
  for (const key of POD_SPEC_CONFIG_KEYS) if (values?.[key] !== undefined) config[key] = values[key];
  return config as PodSpecConfig;
}

/** Parses the text of a runner configuration file onto the defaults; throws WorkflowError (bad input) listing every problem. */
export async function parseRunnerConfig(text: string, file: string): Promise<RunnerConfig> {
  // yaml loads on first use: ~80 ms of CPU that --help and a --steps run would pay (docs/architecture.md).
  const yaml = await import("yaml");
  const lineCounter = new yaml.LineCounter();
  const document = yaml.parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: false });
  const ctx: ReadContext = { yaml, file, text, document, lineCounter, errors: [], warnings: [] };
  for (const error of document.errors)
    reportError(ctx, positionAt(ctx, error.pos[0]), "", `invalid YAML: ${error.message.split("\n")[0]}`);
  if (ctx.errors.length > 0) throw new WorkflowError(ctx.errors);
  if (isNullValue(ctx, document.contents)) return DEFAULT_RUNNER_CONFIG;
  const needsSchemas = document.hasIn(["pod", "affinity"]) || document.hasIn(["pod", "podSpecPatch"]);
  const keys = buildConfigKeys(needsSchemas ? await loadPodSchemas() : UNUSED_POD_SCHEMAS);
  const read = readMap(
    ctx,
    document.contents,
    { line: 1, column: 1 },
    "",
    keys,
    "a map of runner settings such as engines and allowPrivileged",
  );
  const microvm = read?.values.engines?.values.microvm;
  const images = { ...DEFAULT_RUNNER_CONFIG.engines.microvm.images, ...microvm?.values.images };
  const defaultImage = microvm?.values.defaultImage ?? DEFAULT_RUNNER_CONFIG.engines.microvm.defaultImage;
  if (microvm !== undefined && !Object.hasOwn(images, defaultImage)) {
    reportError(
      ctx,
      microvm.valuesAt.defaultImage ?? microvm.position,
      "engines.microvm.defaultImage",
      `${JSON.stringify(defaultImage)} is not one of the images: ${Object.keys(images).join(", ")}`,
    );
  }
  const storage = read?.values.pod?.values.ephemeralStorage;
  const { request, limit } = storage?.values ?? {};
  if (
    storage !== undefined &&
    request !== undefined &&
    limit !== undefined &&
    parseQuantity(request)! > parseQuantity(limit)!
  ) {
    reportError(
      ctx,
      storage.valuesAt.request ?? storage.position,
      "pod.ephemeralStorage.request",
      `${request} is more than the limit ${limit}; a request is at most its limit`,
    );
  }
  if (ctx.errors.length > 0 || read === undefined) throw new WorkflowError(sortIssues(ctx.errors));
  const runtimeClassName = microvm?.values.runtimeClassName;
  return {
    engines: { microvm: { images, defaultImage, ...(runtimeClassName !== undefined ? { runtimeClassName } : {}) } },
    allowPrivileged: read.values.allowPrivileged ?? DEFAULT_RUNNER_CONFIG.allowPrivileged,
    docker: { image: read.values.docker?.values.image ?? DEFAULT_RUNNER_CONFIG.docker.image },
    limits: readLimits(read.values.limits?.values),
    pod: {
      ...(storage === undefined || (request === undefined && limit === undefined)
        ? {}
        : {
            ephemeralStorage: {
              ...(request !== undefined ? { request } : {}),
              ...(limit !== undefined ? { limit } : {}),
            },
          }),
      ...(read.values.pod?.values.disruptionBudget !== undefined
        ? { disruptionBudget: read.values.pod.values.disruptionBudget }
        : {}),
      ...readPodSpecConfig(read.values.pod?.values),
    },
  };
}

/** Reads `--config FILE` (the same bounds as a workflow file); absent, the defaults. Throws InputError. */
export async function readRunnerConfig(file: string | undefined): Promise<RunnerConfigSource> {
  if (file === undefined) return { config: DEFAULT_RUNNER_CONFIG };
  const read = readWorkflowFile(file);
  if (!read.ok)
    throw new WorkflowError([makeIssue(file, read.at ?? { line: 1, column: 1 }, "", `--config: ${read.problem}`)]);
  return { config: await parseRunnerConfig(read.text, file), file };
}
