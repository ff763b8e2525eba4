// The workflow format, key by key: Tangled's keys (when, engine, image, dependencies, clone, environment, steps, the microvm ones) and ours.
import { IMAGE, QUANTITY } from "../core/patterns.js";
import {
  allowEmpty,
  field,
  readBoolean,
  readCount,
  readDurationMs,
  readMap,
  readMatching,
  readNonEmptyText,
  readText,
  readTextOrList,
  type FieldReader,
  type MapSchema,
} from "./field-readers.js";
import { readArtifacts } from "./artifact-schema.js";
import { readCaches, type ParsedCaches } from "./cache-schema.js";
import { readArchitecture, readVirtualisation } from "./machine-schema.js";
import { readEnvironment } from "./environment-schema.js";
import { readServicesKey } from "./service-schema.js";
import { readDependencies, readRegistry, readSubstituters } from "./nix-schema.js";
import { checkGlobPattern } from "./glob-pattern.js";
import {
  describeNode,
  indexPath,
  isMapNode,
  isSeqNode,
  positionOf,
  reportError,
  resolveAlias,
} from "./read-context.js";
import { suggestName } from "./suggest-key.js";
import { PULL_REQUEST_ACTIONS } from "./match-trigger.js";
import { checkResourceBounds } from "./resource-bounds.js";
import type {
  CloneSettings,
  EngineName,
  ResourceSettings,
  ResourcePositions,
  SourcePosition,
  WhenConstraint,
  WorkflowStep,
} from "./workflow-types.js";

/** `branch`/`tag`: a glob pattern or a list of them, each checked as doublestar would. */
const readPatterns: FieldReader<string[]> = (ctx, node, at, path) => {
  const patterns = readTextOrList(ctx, node, at, path);
  if (patterns === undefined) return undefined;
  const resolved = resolveAlias(ctx, node);
  let failed = false;
  patterns.forEach((pattern, index) => {
    const problem = checkGlobPattern(pattern);
    if (problem === undefined) return;
    const item = isSeqNode(ctx, resolved) ? resolved.items[index] : undefined;
    reportError(
      ctx,
      positionOf(ctx, item) ?? at,
      isSeqNode(ctx, resolved) ? indexPath(path, index) : path,
      `the pattern ${JSON.stringify(pattern)} ${problem}`,
    );
    failed = true;
  });
  return failed ? undefined : patterns;
};

/** `types`: pull request actions; one Tangled never sends could never match, so it is refused with the closest. */
const readTypes: FieldReader<string[]> = (ctx, node, at, path) => {
  const types = readTextOrList(ctx, node, at, path);
  const unknown = types?.find((type) => !PULL_REQUEST_ACTIONS.includes(type));
  if (unknown === undefined) return types;
  const suggestion = suggestName(unknown, PULL_REQUEST_ACTIONS);
  reportError(
    ctx,
    at,
    path,
    `${JSON.stringify(unknown)} is not a pull request action Tangled sends (${PULL_REQUEST_ACTIONS.join(", ")})${suggestion ? `; did you mean \`${suggestion}\`?` : ""}`,
  );
  return undefined;
};

const CONSTRAINT_KEYS = {
  event: field(readTextOrList, { required: true }),
  branch: field(readPatterns),
  tag: field(readPatterns),
  paths: field(readPatterns),
  types: field(readTypes),
} satisfies MapSchema;

/** The events Tangled triggers workflows with. */
export const KNOWN_EVENTS: readonly string[] = ["push", "pull_request", "manual"];

export interface ParsedConstraint extends WhenConstraint {
  readonly position: SourcePosition;
  readonly eventAt?: SourcePosition;
}

const readConstraint: FieldReader<ParsedConstraint> = (ctx, node, at, path) => {
  const read = readMap(ctx, node, at, path, CONSTRAINT_KEYS, "a constraint such as {event: push, branch: main}");
  if (read?.values.event === undefined) return undefined;
  const { event, branch, tag, paths, types } = read.values;
  return {
    event,
    ...(branch ? { branch } : {}),
    ...(tag ? { tag } : {}),
    ...(paths ? { paths } : {}),
    ...(types ? { types } : {}),
    position: read.position,
    ...(read.keys.event ? { eventAt: read.keys.event } : {}),
  };
};

const readWhen: FieldReader<ParsedConstraint[]> = (ctx, node, at, path) => {
  const list = resolveAlias(ctx, node);
  if (!isSeqNode(ctx, list)) {
    reportError(
      ctx,
      at,
      path,
      `expected a list of constraints such as - {event: push, branch: main}, found ${describeNode(ctx, list)}`,
    );
    return undefined;
  }
  const constraints: ParsedConstraint[] = [];
  list.items.forEach((item, index) => {
    const constraint = readConstraint(ctx, item, positionOf(ctx, item) ?? at, indexPath(path, index));
    if (constraint) constraints.push(constraint);
  });
  return constraints;
};

export interface WrittenEngine {
  readonly name: EngineName;
  readonly written: string;
}

export const ENGINES: Readonly<Record<string, EngineName>> = {
  kubernetes: "kubernetes",
  k8s: "kubernetes",
  nixery: "nixery",
  microvm: "microvm",
};

const readEngine: FieldReader<WrittenEngine> = (ctx, node, at, path) => {
  const written = readText(ctx, node, at, path);
  if (written === undefined) return undefined;
  const name = Object.hasOwn(ENGINES, written) ? ENGINES[written] : undefined;
  if (name !== undefined) return { name, written };
  const suggestion = suggestName(written, Object.keys(ENGINES));
  reportError(
    ctx,
    at,
    path,
    `expected one of kubernetes (or k8s), nixery, microvm; found ${JSON.stringify(written)}${suggestion ? `; did you mean \`${suggestion}\`?` : ""}`,
  );
  return undefined;
};

/** A word of a shell command line that needs no quoting: no quotes, spaces, `$`, `;`, `|`, `&`, globs, redirections. */
const SHELL_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;
const COMMAND_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/;
const ABSOLUTE_PATH = /^\/[A-Za-z0-9_.+/-]*$/;

/** `shell`: plain words such as `bash -eo pipefail`; the step's script file is passed after them. */
const readShell: FieldReader<string[]> = (ctx, node, at, path) => {
  const text = readNonEmptyText(ctx, node, at, path);
  if (text === undefined) return undefined;
  const words = text.trim().split(/\s+/);
  const bad = words.find((word) => !SHELL_WORD.test(word));
  if (bad !== undefined) {
    reportError(
      ctx,
      at,
      path,
      `expected plain words without quotes or shell characters, such as bash -eo pipefail; found ${JSON.stringify(bad)} in ${JSON.stringify(text)}`,
    );
    return undefined;
  }
  if (!COMMAND_NAME.test(words[0]!) && !ABSOLUTE_PATH.test(words[0]!)) {
    reportError(
      ctx,
      at,
      path,
      `expected a command name or an absolute path as the first word, such as bash or /bin/sh; found ${JSON.stringify(words[0])}`,
    );
    return undefined;
  }
  return words;
};

const CLONE_KEYS = {
  skip: field(readBoolean),
  depth: field(readCount),
  submodules: field(readBoolean),
  tags: field(readBoolean),
} satisfies MapSchema;

export interface ParsedClone extends CloneSettings {
  readonly position: SourcePosition;
  /** Whether the file set `submodules` (true by default, which says nothing about a skipped checkout). */
  readonly submodulesWritten: boolean;
}

/** Tangled takes submodules and tags as true unless the file says false (CloneOpts.AsRecord). */
export const DEFAULT_CLONE: CloneSettings = { skip: false, submodules: true, tags: true };

const readClone: FieldReader<ParsedClone> = (ctx, node, at, path) => {
  const read = readMap(ctx, node, at, path, CLONE_KEYS, "a map such as {skip: false, depth: 50, submodules: true}");
  if (read === undefined) return undefined;
  const { skip, depth, submodules, tags } = read.values;
  return {
    skip: skip ?? false,
    ...(depth !== undefined ? { depth } : {}),
    submodules: submodules ?? true,
    tags: tags ?? true,
    position: read.position,
    submodulesWritten: submodules !== undefined,
  };
};

const readQuantity = readMatching(QUANTITY, "a Kubernetes quantity such as 500m, 2 or 512Mi");

/** A cpu or memory quantity within the hard bounds (src/workflow/resource-bounds.ts). */
export function readBoundedQuantity(kind: "cpu" | "memory"): FieldReader<string> {
  return (ctx, node, at, path) => {
    const text = readQuantity(ctx, node, at, path);
    if (text === undefined) return undefined;
    const problem = checkResourceBounds(kind, text);
    if (problem === undefined) return text;
    reportError(ctx, at, path, problem);
    return undefined;
  };
}

const RESOURCE_KEYS = {
  cpu: field(readBoundedQuantity("cpu")),
  memory: field(readBoundedQuantity("memory")),
} satisfies MapSchema;

/** `resources`, and where each value stands (what a limit's message points at). */
const readResources: FieldReader<ResourceSettings & { readonly at: ResourcePositions }> = (ctx, node, at, path) => {
  const read = readMap(ctx, node, at, path, RESOURCE_KEYS, "a map such as {cpu: 2, memory: 4Gi}");
  return read === undefined ? undefined : { ...read.values, at: { ...read.valuesAt } };
};

const MAX_STEP_NAME_LENGTH = 200;

/** Half of a surrogate pair without its other half: text no UTF-8 file holds (a file's bytes are checked on reading). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?:^|[^\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A step's name identifies it in logs and results: UTF-8, not empty, one line, at most 200 characters. */
const readStepName: FieldReader<string> = (ctx, node, at, path) => {
  const name = readNonEmptyText(ctx, node, at, path);
  if (name === undefined) return undefined;
  const surrogate = LONE_SURROGATE.exec(name);
  if (surrogate)
    reportError(
      ctx,
      at,
      path,
      `expected a step name in UTF-8, found a lone surrogate (U+${surrogate[0]
        .codePointAt(surrogate[0].length - 1)!
        .toString(16)
        .toUpperCase()}) in ${JSON.stringify(name)}`,
    );
  else if (/[\x00-\x1f\x7f]/.test(name))
    reportError(
      ctx,
      at,
      path,
      `expected a step name on one line without control characters, found ${JSON.stringify(name)}`,
    );
  else if (name.length > MAX_STEP_NAME_LENGTH)
    reportError(
      ctx,
      at,
      path,
      `expected a step name of at most ${MAX_STEP_NAME_LENGTH} characters, found ${name.length}`,
    );
  else return name;
  return undefined;
};

const STEP_KEYS = {
  name: field(readStepName, { required: true }),
  command: field(readNonEmptyText, { required: true }),
  environment: field(allowEmpty(readEnvironment)),
  timeout: field(readDurationMs),
} satisfies MapSchema;

/** `steps`: at least one; names must differ, since logs and results tell steps apart by name. */
const readSteps: FieldReader<WorkflowStep[]> = (ctx, node, at, path) => {
  const list = resolveAlias(ctx, node);
  if (!isSeqNode(ctx, list)) {
    reportError(
      ctx,
      at,
      path,
      `expected a list of steps such as - {name: build, command: make}, found ${describeNode(ctx, list)}`,
    );
    return undefined;
  }
  if (list.items.length === 0) {
    reportError(ctx, at, path, "expected at least one step, found an empty list");
    return undefined;
  }
  const steps: WorkflowStep[] = [];
  const named = new Map<string, { path: string; at: SourcePosition }>();
  list.items.forEach((item, index) => {
    const stepPath = indexPath(path, index);
    const read = readMap(
      ctx,
      item,
      positionOf(ctx, item) ?? at,
      stepPath,
      STEP_KEYS,
      "a step such as {name: build, command: make}",
    );
    if (read === undefined) return;
    const { name, command, environment, timeout } = read.values;
    if (name !== undefined) {
      const nameAt = read.valuesAt.name ?? read.position;
      const first = named.get(name);
      if (first !== undefined) {
        reportError(
          ctx,
          nameAt,
          `${stepPath}.name`,
          `duplicate step name ${JSON.stringify(name)}, already used by ${first.path} at ${ctx.file}:${first.at.line}:${first.at.column}; logs and results tell steps apart by name`,
        );
        return;
      }
      named.set(name, { path: stepPath, at: nameAt });
    }
    if (name === undefined || command === undefined) return;
    steps.push({
      name,
      command,
      environment: environment ?? [],
      ...(timeout !== undefined ? { timeoutMs: timeout } : {}),
      position: read.position,
    });
  });
  return steps;
};

/** `caches`: our list of {key, paths} entries, or Tangled's microvm map of binary cache URL to public key. */
const readCachesOrSubstituters: FieldReader<
  | { kind: "caches"; read: ParsedCaches }
  | { kind: "substituters"; substituters: Array<{ url: string; key: string }>; position: SourcePosition }
> = (ctx, node, at, path) => {
  if (isMapNode(ctx, resolveAlias(ctx, node))) {
    const read = readSubstituters(ctx, node, at, path);
    return read === undefined ? undefined : { kind: "substituters", ...read };
  }
  const read = readCaches(ctx, node, at, path);
  return read === undefined ? undefined : { kind: "caches", read };
};

/** Every top-level key, in the order the README documents them. */
export const WORKFLOW_KEYS = {
  when: field(allowEmpty(readWhen)),
  engine: field(readEngine),
  image: field(readMatching(IMAGE, "an image reference such as alpine:3.20")),
  shell: field(readShell),
  timeout: field(readDurationMs),
  resources: field(allowEmpty(readResources)),
  architecture: field(readArchitecture),
  dependencies: field(allowEmpty(readDependencies)),
  registry: field(allowEmpty(readRegistry)),
  virtualisation: field(allowEmpty(readVirtualisation)),
  services: field(allowEmpty(readServicesKey)),
  clone: field(allowEmpty(readClone)),
  environment: field(allowEmpty(readEnvironment)),
  steps: field(readSteps, { required: true }),
  caches: field(allowEmpty(readCachesOrSubstituters)),
  artifacts: field(allowEmpty(readArtifacts)),
} satisfies MapSchema;
