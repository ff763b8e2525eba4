// Parses the text of a workflow file into a Workflow, or every problem in it with its file:line:column.
import type { YAMLError } from "yaml";
import { listHashFilesCalls, listTemplateVariables, RUN_VARIABLE_SOURCES } from "./render-key.js";
import { readMap } from "./field-readers.js";
import {
  isNullValue,
  positionAt,
  reportError,
  reportWarning,
  type ReadContext,
  type YamlModule,
} from "./read-context.js";
import { suggestName } from "./suggest-key.js";
import { makeIssue, sortIssues, type WorkflowIssue } from "./workflow-errors.js";
import { chooseEngine } from "./engine-rules.js";
import { findForeignWorkflow, type ForeignWorkflow } from "./foreign-workflow.js";
import {
  DEFAULT_CLONE,
  KNOWN_EVENTS,
  WORKFLOW_KEYS,
  type ParsedClone,
  type ParsedConstraint,
} from "./workflow-schema.js";
import type { KeyTemplateAt, SourcePosition, Workflow } from "./workflow-types.js";
import type { EnvVar } from "../core/env-var.js";

export type ParseResult =
  | { readonly ok: true; readonly workflow: Workflow; readonly warnings: readonly WorkflowIssue[] }
  /** `foreign`: the file is for another CI system; `errors` is then the one issue saying so. */
  | {
      readonly ok: false;
      readonly errors: readonly WorkflowIssue[];
      readonly warnings: readonly WorkflowIssue[];
      readonly foreign?: ForeignWorkflow;
    };

const TOP: SourcePosition = { line: 1, column: 1 };
const TOP_LEVEL = "a map of workflow keys such as when, engine and steps";

/** The YAML library's message, without its own position (ours comes first, like every other message). */
function describeYamlError(error: YAMLError): string {
  if (error.code === "MULTIPLE_DOCS") return "expected one YAML document, found a second one (`---`)";
  return error.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "");
}

/** Warnings for `when` entries that cannot do what they seem to: Tangled's matching, read in workflow/def.go. */
function checkConstraints(ctx: ReadContext, when: readonly ParsedConstraint[]): void {
  when.forEach((constraint, index) => {
    const path = `when[${index}]`;
    for (const event of constraint.event) {
      if (KNOWN_EVENTS.includes(event)) continue;
      const suggestion = suggestName(event, KNOWN_EVENTS);
      reportWarning(
        ctx,
        constraint.eventAt ?? constraint.position,
        `${path}.event`,
        `${JSON.stringify(event)} is not an event Tangled sends (${KNOWN_EVENTS.join(", ")})${suggestion ? `; did you mean \`${suggestion}\`?` : ""}`,
      );
    }
    const onlyManual = constraint.event.every((event) => event === "manual");
    if (!onlyManual && (constraint.branch ?? []).length === 0 && (constraint.tag ?? []).length === 0) {
      reportWarning(
        ctx,
        constraint.position,
        path,
        "lists no `branch` or `tag`, so it matches no push or pull request (a push must match by branch or tag, a pull request by its target branch)",
      );
    }
  });
}

/** Tangled's own checks of `clone` (workflow/compile.go): skipping the checkout makes depth and submodules moot. */
function checkClone(ctx: ReadContext, clone: ParsedClone): void {
  if (!clone.skip) return;
  if (clone.submodules && clone.submodulesWritten)
    reportWarning(ctx, clone.position, "clone", "`skip` and `submodules` cannot both apply; the checkout is skipped");
  if (clone.depth !== undefined && clone.depth > 0)
    reportWarning(ctx, clone.position, "clone", "`skip` and `depth` cannot both apply; the checkout is skipped");
}

/**
 * What a cache key may use, checked once the whole file is read: a run variable or one of the workflow's own
 * `environment` (the variables every step starts with), and hashFiles only when there is a checkout to hash.
 */
function checkCacheKeys(
  ctx: ReadContext,
  templates: readonly KeyTemplateAt[],
  environment: readonly EnvVar[],
  skipsCheckout: boolean,
): void {
  const known = [...Object.keys(RUN_VARIABLE_SOURCES), ...environment.map((variable) => variable.name)];
  for (const { template, position, path } of templates) {
    for (const name of listTemplateVariables(template)) {
      if (known.includes(name)) continue;
      const suggestion = suggestName(name, known);
      reportError(
        ctx,
        position,
        path,
        `{{ ${name} }} is not a run variable (CI, KNOTLESS_*) nor one of the workflow's \`environment\`${suggestion ? `; did you mean \`${suggestion}\`?` : ""}`,
      );
    }
    if (skipsCheckout && listHashFilesCalls(template).length > 0) {
      reportError(
        ctx,
        position,
        path,
        "hashFiles hashes files of the checkout, but clone.skip is true, so there is none; key the cache on something else, or do not skip the checkout",
      );
    }
  }
}

/**
 * Parses a workflow file; loads the `yaml` package on first use (see parseWorkflowWith). Collects every problem in the file (unknown keys with suggestions, wrong types, bad
 * values, duplicate step names), each at the place it stands; a YAML syntax error makes the structure unreliable,
 * so then only the syntax errors are reported. `file` names the file in messages and step sources.
 */
export async function parseWorkflow(text: string, file: string): Promise<ParseResult> {
  return parseWorkflowWith(await import("yaml"), text, file); // ~80 ms of CPU --help and a --steps run never pay
}

/** parseWorkflow with the `yaml` package handed in (synchronous), for a caller that has loaded it already. */
export function parseWorkflowWith(yaml: YamlModule, text: string, file: string): ParseResult {
  const lineCounter = new yaml.LineCounter();
  const document = yaml.parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: false });
  const ctx: ReadContext = { yaml, file, text, document, lineCounter, errors: [], warnings: [] };
  for (const error of document.errors)
    reportError(ctx, positionAt(ctx, error.pos[0]), "", `invalid YAML: ${describeYamlError(error)}`);
  for (const warning of document.warnings)
    reportWarning(ctx, positionAt(ctx, warning.pos[0]), "", describeYamlError(warning));
  if (ctx.errors.length > 0) return { ok: false, errors: sortIssues(ctx.errors), warnings: sortIssues(ctx.warnings) };
  if (isNullValue(ctx, document.contents)) {
    reportError(ctx, TOP, "", `expected ${TOP_LEVEL}, found an empty file`);
    return { ok: false, errors: ctx.errors, warnings: ctx.warnings };
  }
  const foreign = findForeignWorkflow(ctx, document.contents);
  if (foreign !== undefined)
    return { ok: false, errors: [makeIssue(file, foreign.at, foreign.path, foreign.message)], warnings: [], foreign };
  const read = readMap(ctx, document.contents, TOP, "", WORKFLOW_KEYS, TOP_LEVEL);
  if (read === undefined) return { ok: false, errors: ctx.errors, warnings: ctx.warnings };
  const { values, keys } = read;
  const caches = values.caches?.kind === "caches" ? values.caches.read : undefined;
  const substituters = values.caches?.kind === "substituters" ? values.caches : undefined;
  const choice = chooseEngine(ctx, {
    ...(values.engine ? { engine: values.engine } : {}),
    ...(keys.engine ? { engineAt: keys.engine } : {}),
    ...(values.image !== undefined ? { image: values.image } : {}),
    ...(values.dependencies ? { dependencies: values.dependencies } : {}),
    ...(values.registry ? { registry: values.registry } : {}),
    ...(substituters ? { substituters } : {}),
    ...(values.virtualisation?.docker ? { docker: values.virtualisation.docker } : {}),
  });
  if (values.when) checkConstraints(ctx, values.when);
  if (values.clone) checkClone(ctx, values.clone);
  if (caches) checkCacheKeys(ctx, caches.templates, values.environment ?? [], values.clone?.skip === true);
  const warnings = sortIssues(ctx.warnings);
  if (ctx.errors.length > 0 || values.steps === undefined)
    return { ok: false, errors: sortIssues(ctx.errors), warnings };
  const workflow: Workflow = {
    file,
    ...(values.when && values.when.length > 0
      ? { when: values.when.map(({ eventAt: _eventAt, ...constraint }) => constraint) }
      : {}),
    engine: choice.engine,
    engineFrom: choice.engineFrom,
    enginePosition: choice.enginePosition,
    ...(values.image !== undefined
      ? { image: values.image, ...(read.valuesAt.image ? { imagePosition: read.valuesAt.image } : {}) }
      : {}),
    ...(values.architecture !== undefined ? { architecture: values.architecture } : {}),
    ...(values.timeout !== undefined
      ? { timeoutMs: values.timeout, ...(read.valuesAt.timeout ? { timeoutPosition: read.valuesAt.timeout } : {}) }
      : {}),
    ...(values.shell !== undefined ? { shell: values.shell } : {}),
    resources: values.resources
      ? {
          ...(values.resources.cpu !== undefined ? { cpu: values.resources.cpu } : {}),
          ...(values.resources.memory !== undefined ? { memory: values.resources.memory } : {}),
        }
      : {},
    ...(values.resources ? { resourcesAt: values.resources.at } : {}),
    ...(choice.nixpkgs !== undefined ? { nixpkgs: choice.nixpkgs } : {}),
    ...(choice.nix !== undefined ? { nix: choice.nix } : {}),
    ...(choice.docker !== undefined ? { docker: choice.docker } : {}),
    clone: values.clone
      ? {
          skip: values.clone.skip,
          ...(values.clone.depth !== undefined ? { depth: values.clone.depth } : {}),
          submodules: values.clone.submodules,
          tags: values.clone.tags,
        }
      : DEFAULT_CLONE,
    environment: values.environment ?? [],
    steps: values.steps,
    ...(caches && caches.caches.length > 0 ? { caches: caches.caches } : {}),
    ...(values.artifacts && values.artifacts.length > 0 ? { artifacts: values.artifacts } : {}),
    ...(values.services && values.services.length > 0 ? { services: values.services } : {}),
  };
  return { ok: true, workflow, warnings };
}
