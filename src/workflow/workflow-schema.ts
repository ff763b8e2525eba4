// The workflow format, key by key: Tangled's keys (when, engine, dependencies, clone, environment, steps) and ours.
import { ENV_NAME, IMAGE, QUANTITY } from "../config/patterns.js";
import { field, readBoolean, readCount, readDurationMs, readEntries, readMap, readMatching, readNonEmptyText, readText, readTextOrList, type FieldReader, type MapSchema } from "./field-readers.js";
import { readArtifacts } from "./artifact-schema.js";
import { readCaches } from "./cache-schema.js";
import { checkGlobPattern } from "./glob-pattern.js";
import { describeNode, indexPath, isNullValue, isSeqNode, positionOf, readScalarText, reportError, resolveAlias, type ReadContext } from "./read-context.js";
import { suggestName } from "./suggest-key.js";
import type { CloneSettings, EngineName, EnvVar, ResourceSettings, SourcePosition, WhenConstraint, WorkflowStep } from "./workflow-types.js";

/** A key whose empty value (`environment:` with nothing after it) means the same as leaving the key out, as in Tangled. */
function allowEmpty<T>(read: FieldReader<T>): FieldReader<T | null> {
  return (ctx, node, at, path) => (isNullValue(ctx, resolveAlias(ctx, node)) ? null : read(ctx, node, at, path));
}

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
    reportError(ctx, positionOf(ctx, item) ?? at, isSeqNode(ctx, resolved) ? indexPath(path, index) : path, `the pattern ${JSON.stringify(pattern)} ${problem}`);
    failed = true;
  });
  return failed ? undefined : patterns;
};

const CONSTRAINT_KEYS = {
  event: field(readTextOrList, { required: true }),
  branch: field(readPatterns),
  tag: field(readPatterns),
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
  const { event, branch, tag } = read.values;
  return { event, ...(branch ? { branch } : {}), ...(tag ? { tag } : {}), position: read.position, ...(read.keys.event ? { eventAt: read.keys.event } : {}) };
};

const readWhen: FieldReader<ParsedConstraint[]> = (ctx, node, at, path) => {
  const list = resolveAlias(ctx, node);
  if (!isSeqNode(ctx, list)) {
    reportError(ctx, at, path, `expected a list of constraints such as - {event: push, branch: main}, found ${describeNode(ctx, list)}`);
    return undefined;
  }
  const constraints: ParsedConstraint[] = [];
  list.items.forEach((item, index) => {
    const constraint = readConstraint(ctx, item, positionOf(ctx, item) ?? at, indexPath(path, index));
    if (constraint) constraints.push(constraint);
  });
  return constraints;
};

export interface EngineChoice {
  readonly name: EngineName;
  readonly written: string;
}

const ENGINES: Readonly<Record<string, EngineName>> = { kubernetes: "kubernetes", k8s: "kubernetes", nixery: "nixery" };

const readEngine: FieldReader<EngineChoice> = (ctx, node, at, path) => {
  const written = readText(ctx, node, at, path);
  if (written === undefined) return undefined;
  const name = Object.hasOwn(ENGINES, written) ? ENGINES[written] : undefined;
  if (name !== undefined) return { name, written };
  const suggestion = suggestName(written, Object.keys(ENGINES));
  reportError(ctx, at, path, `expected one of kubernetes (or k8s), nixery; found ${JSON.stringify(written)}${suggestion ? `; did you mean \`${suggestion}\`?` : ""}`);
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
    reportError(ctx, at, path, `expected plain words without quotes or shell characters, such as bash -eo pipefail; found ${JSON.stringify(bad)} in ${JSON.stringify(text)}`);
    return undefined;
  }
  if (!COMMAND_NAME.test(words[0]!) && !ABSOLUTE_PATH.test(words[0]!)) {
    reportError(ctx, at, path, `expected a command name or an absolute path as the first word, such as bash or /bin/sh; found ${JSON.stringify(words[0])}`);
    return undefined;
  }
  return words;
};

/** `environment`: names as POSIX shells take them; each value a scalar as written, an empty one "". */
const readEnvironment: FieldReader<EnvVar[]> = (ctx, node, at, path) => {
  const variables: EnvVar[] = [];
  const position = readEntries(ctx, node, at, path, "a map of variable names to values", ({ key, keyAt, keyPath, value, valueAt }) => {
    if (!ENV_NAME.test(key)) {
      reportError(ctx, keyAt, keyPath, `expected a variable name of letters, digits and _ that does not start with a digit, found ${JSON.stringify(key)}`);
      return;
    }
    const resolved = resolveAlias(ctx, value);
    if (isNullValue(ctx, resolved)) {
      variables.push({ name: key, value: "" });
      return;
    }
    const text = readScalarText(ctx, resolved);
    if (text === undefined) reportError(ctx, valueAt, keyPath, `expected a string, number or boolean, found ${describeNode(ctx, resolved)}`);
    else variables.push({ name: key, value: text });
  });
  return position === undefined ? undefined : variables;
};

/** A nixpkgs attribute name as Nixery takes it in an image path: no `/`, no spaces. */
const NIX_PACKAGE = /^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/;

export interface Dependencies {
  readonly nixpkgs?: readonly string[];
  readonly nixpkgsAt?: SourcePosition;
}

/** `dependencies`: `nixpkgs` feeds the Nixery image; any other registry (Tangled's flake registries) is refused. */
const readDependencies: FieldReader<Dependencies> = (ctx, node, at, path) => {
  let result: Dependencies = {};
  const position = readEntries(ctx, node, at, path, "a map of registries to package lists, such as nixpkgs: [go, gcc]", ({ key, keyAt, keyPath, value, valueAt }) => {
    if (key !== "nixpkgs") {
      reportError(ctx, keyAt, keyPath, `custom registries are not supported, only \`nixpkgs\`; install the tool in a step, or set an \`image\` that has it`);
      return;
    }
    const resolved = resolveAlias(ctx, value);
    if (isNullValue(ctx, resolved)) {
      result = { nixpkgs: [], nixpkgsAt: keyAt };
      return;
    }
    if (!isSeqNode(ctx, resolved)) {
      reportError(ctx, valueAt, keyPath, `expected a list of package names, found ${describeNode(ctx, resolved)}`);
      return;
    }
    const packages: string[] = [];
    resolved.items.forEach((item, index) => {
      const itemAt = positionOf(ctx, item) ?? valueAt;
      const itemPath = indexPath(keyPath, index);
      const name = readText(ctx, item, itemAt, itemPath);
      if (name === undefined) return;
      if (NIX_PACKAGE.test(name)) packages.push(name);
      else reportError(ctx, itemAt, itemPath, `expected a nixpkgs package name such as go or python3Packages.pip, found ${JSON.stringify(name)}`);
    });
    result = { nixpkgs: packages, nixpkgsAt: keyAt };
  });
  return position === undefined ? undefined : result;
};

const CLONE_KEYS = {
  skip: field(readBoolean),
  depth: field(readCount),
  submodules: field(readBoolean),
} satisfies MapSchema;

export interface ParsedClone extends CloneSettings {
  readonly position: SourcePosition;
}

const readClone: FieldReader<ParsedClone> = (ctx, node, at, path) => {
  const read = readMap(ctx, node, at, path, CLONE_KEYS, "a map such as {skip: false, depth: 50, submodules: true}");
  if (read === undefined) return undefined;
  const { skip, depth, submodules } = read.values;
  return { skip: skip ?? false, ...(depth !== undefined ? { depth } : {}), submodules: submodules ?? false, position: read.position };
};

const readQuantity = readMatching(QUANTITY, "a Kubernetes quantity such as 500m, 2 or 512Mi");

const RESOURCE_KEYS = {
  cpu: field(readQuantity),
  memory: field(readQuantity),
} satisfies MapSchema;

const readResources: FieldReader<ResourceSettings> = (ctx, node, at, path) => {
  const read = readMap(ctx, node, at, path, RESOURCE_KEYS, "a map such as {cpu: 2, memory: 4Gi}");
  return read === undefined ? undefined : { ...read.values };
};

const MAX_STEP_NAME_LENGTH = 200;

/** Half of a surrogate pair without its other half: text no UTF-8 file holds (a file's bytes are checked on reading). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?:^|[^\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A step's name identifies it in logs and results: UTF-8, not empty, one line, at most 200 characters. */
const readStepName: FieldReader<string> = (ctx, node, at, path) => {
  const name = readNonEmptyText(ctx, node, at, path);
  if (name === undefined) return undefined;
  const surrogate = LONE_SURROGATE.exec(name);
  if (surrogate) reportError(ctx, at, path, `expected a step name in UTF-8, found a lone surrogate (U+${surrogate[0].codePointAt(surrogate[0].length - 1)!.toString(16).toUpperCase()}) in ${JSON.stringify(name)}`);
  else if (/[\x00-\x1f\x7f]/.test(name)) reportError(ctx, at, path, `expected a step name on one line without control characters, found ${JSON.stringify(name)}`);
  else if (name.length > MAX_STEP_NAME_LENGTH) reportError(ctx, at, path, `expected a step name of at most ${MAX_STEP_NAME_LENGTH} characters, found ${name.length}`);
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
    reportError(ctx, at, path, `expected a list of steps such as - {name: build, command: make}, found ${describeNode(ctx, list)}`);
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
    const read = readMap(ctx, item, positionOf(ctx, item) ?? at, stepPath, STEP_KEYS, "a step such as {name: build, command: make}");
    if (read === undefined) return;
    const { name, command, environment, timeout } = read.values;
    if (name !== undefined) {
      const nameAt = read.valuesAt.name ?? read.position;
      const first = named.get(name);
      if (first !== undefined) {
        reportError(ctx, nameAt, `${stepPath}.name`, `duplicate step name ${JSON.stringify(name)}, already used by ${first.path} at ${ctx.file}:${first.at.line}:${first.at.column}; logs and results tell steps apart by name`);
        return;
      }
      named.set(name, { path: stepPath, at: nameAt });
    }
    if (name === undefined || command === undefined) return;
    steps.push({ name, command, environment: environment ?? [], ...(timeout !== undefined ? { timeoutMs: timeout } : {}), position: read.position });
  });
  return steps;
};

/** Every top-level key, in the order the README documents them. */
export const WORKFLOW_KEYS = {
  when: field(allowEmpty(readWhen)),
  engine: field(readEngine),
  image: field(readMatching(IMAGE, "an image reference such as alpine:3.20")),
  shell: field(readShell),
  timeout: field(readDurationMs),
  resources: field(allowEmpty(readResources)),
  dependencies: field(allowEmpty(readDependencies)),
  clone: field(allowEmpty(readClone)),
  environment: field(allowEmpty(readEnvironment)),
  steps: field(readSteps, { required: true }),
  caches: field(allowEmpty(readCaches)),
  artifacts: field(allowEmpty(readArtifacts)),
} satisfies MapSchema;

