// What the readers of a workflow file share: the source, positions of YAML nodes, key paths, the issues found.
import type { Document, LineCounter, Scalar, YAMLMap, YAMLSeq } from "yaml";
import { makeIssue, type WorkflowIssue } from "./workflow-errors.js";
import type { SourcePosition } from "./workflow-types.js";

/** The `yaml` package, loaded when a file is parsed: a static import would put it in every command's start-up. */
export type YamlModule = typeof import("yaml");

export interface ReadContext {
  readonly yaml: YamlModule;
  readonly file: string;
  readonly text: string;
  readonly document: Document.Parsed;
  readonly lineCounter: LineCounter;
  readonly errors: WorkflowIssue[];
  readonly warnings: WorkflowIssue[];
}

/** The 1-based line and column of a character offset. */
export function positionAt(ctx: ReadContext, offset: number): SourcePosition {
  const { line, col } = ctx.lineCounter.linePos(offset);
  return { line, column: col };
}

/** Where a node starts, or undefined for a node without a range. */
export function positionOf(ctx: ReadContext, node: unknown): SourcePosition | undefined {
  const range = (node as { range?: [number, number, number] } | null)?.range;
  return range ? positionAt(ctx, range[0]) : undefined;
}

export function reportError(ctx: ReadContext, at: SourcePosition, path: string, message: string): void {
  ctx.errors.push(makeIssue(ctx.file, at, path, message));
}

export function reportWarning(ctx: ReadContext, at: SourcePosition, path: string, message: string): void {
  ctx.warnings.push(makeIssue(ctx.file, at, path, message));
}

/** An alias (`*name`) stands for the node its anchor marks; anything else is itself. */
export function resolveAlias(ctx: ReadContext, node: unknown): unknown {
  return ctx.yaml.isAlias(node) ? node.resolve(ctx.document) : node;
}

export function isMapNode(ctx: ReadContext, node: unknown): node is YAMLMap<unknown, unknown> {
  return ctx.yaml.isMap(node);
}

export function isSeqNode(ctx: ReadContext, node: unknown): node is YAMLSeq<unknown> {
  return ctx.yaml.isSeq(node);
}

export function isScalarNode(ctx: ReadContext, node: unknown): node is Scalar<unknown> {
  return ctx.yaml.isScalar(node);
}

/** Whether a value is absent: nothing after the colon, `~` or `null`. */
export function isNullValue(ctx: ReadContext, node: unknown): boolean {
  return node === null || node === undefined || (isScalarNode(ctx, node) && node.value === null);
}

/** `steps` + `name` → `steps.name`; a key that is not a plain name is quoted: `dependencies["git+https://x"]`. */
export function joinPath(path: string, key: string): string {
  if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(key)) return path === "" ? key : `${path}.${key}`;
  return `${path}[${JSON.stringify(key)}]`;
}

/** `steps` + 1 → `steps[1]`. */
export function indexPath(path: string, index: number): string {
  return `${path}[${index}]`;
}

/** How a value looks, for "found ..." in messages: a map, a list, a string, a number, a boolean, nothing. */
export function describeNode(ctx: ReadContext, node: unknown): string {
  if (isNullValue(ctx, node)) return "nothing";
  if (isMapNode(ctx, node)) return "a map";
  if (isSeqNode(ctx, node)) return "a list";
  if (isScalarNode(ctx, node)) {
    if (typeof node.value === "string") return "a string";
    if (typeof node.value === "number" || typeof node.value === "bigint") return "a number";
    if (typeof node.value === "boolean") return "a boolean";
  }
  return "a value of another kind";
}

/**
 * A scalar's text as written: a string is its value (quoted or not, block scalars included); a number or boolean
 * is its source text (`1.0` stays "1.0", `0x10` stays "0x10", `true` stays "true"), as Tangled's YAML decoder
 * gives a string field. Undefined for anything that is not a non-null scalar.
 */
export function readScalarText(ctx: ReadContext, node: unknown): string | undefined {
  if (!isScalarNode(ctx, node) || node.value === null) return undefined;
  if (typeof node.value === "string") return node.value;
  if (node.range) return ctx.text.slice(node.range[0], node.range[1]);
  return String(node.value);
}
