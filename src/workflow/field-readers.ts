// Readers for the kinds of values a workflow file holds: text, lists of text, booleans, numbers, durations, maps of keys.
import { MAX_DURATION_MS, parseDuration } from "../core/duration.js";
import {
  describeNode,
  indexPath,
  isMapNode,
  isNullValue,
  isScalarNode,
  isSeqNode,
  joinPath,
  positionOf,
  readScalarText,
  reportError,
  resolveAlias,
  type ReadContext,
} from "./read-context.js";
import { suggestName } from "./suggest-key.js";
import type { SourcePosition } from "./workflow-types.js";

/**
 * Reads one value: `node` is the YAML value (null when nothing follows the colon), `at` where to point messages
 * about it (the key when the value is empty), `path` its key path. Returns undefined after reporting a problem.
 */
export type FieldReader<T> = (ctx: ReadContext, node: unknown, at: SourcePosition, path: string) => T | undefined;

export interface FieldSpec<T> {
  readonly read: FieldReader<T>;
  /** Reported as missing when absent (an empty value counts as present and is the reader's to judge). */
  readonly required?: boolean;
}

/** The keys a map may hold, each with its reader: adding a key to the format is one entry. */
export type MapSchema = { readonly [key: string]: FieldSpec<unknown> };

export type MapValues<S extends MapSchema> = { -readonly [K in keyof S]?: S[K] extends FieldSpec<infer T> ? T : never };

export interface MapRead<S extends MapSchema> {
  readonly values: MapValues<S>;
  /** Where each key that was read stands, and where its value does (the key's place when the value is empty). */
  readonly keys: { readonly [K in keyof S]?: SourcePosition };
  readonly valuesAt: { readonly [K in keyof S]?: SourcePosition };
  readonly position: SourcePosition;
}

/** Declares a key: its reader, and whether the map must have it. */
export function field<T>(read: FieldReader<T>, options: { required?: boolean } = {}): FieldSpec<T> {
  return { read, ...options };
}

/** The message for a key the schema does not know, with the closest known key when one is close. */
export function describeUnknownKey(key: string, known: readonly string[]): string {
  if (key === "<<") return "merge keys (`<<`) are not supported; write the keys out";
  const suggestion = suggestName(key, known);
  if (suggestion !== undefined) return `unknown key; did you mean \`${suggestion}\`?`;
  return `unknown key; expected one of ${known.map((name) => `\`${name}\``).join(", ")}`;
}

/** One key of a map as readEntries hands it over. */
export interface MapEntry {
  readonly key: string;
  readonly keyAt: SourcePosition;
  readonly keyPath: string;
  /** The value node (null when nothing follows the colon) and where messages about it point. */
  readonly value: unknown;
  readonly valueAt: SourcePosition;
}

/**
 * Goes through a map's keys in order, reporting a value that is not a map, a key that is not a name and a key
 * set twice (naming both places); hands every other key to `readEntry`. Returns where the map starts, or
 * undefined when it is not a map.
 */
export function readEntries(
  ctx: ReadContext,
  node: unknown,
  at: SourcePosition,
  path: string,
  what: string,
  readEntry: (entry: MapEntry) => void,
): SourcePosition | undefined {
  const map = resolveAlias(ctx, node);
  if (!isMapNode(ctx, map)) {
    reportError(ctx, at, path, `expected ${what}, found ${describeNode(ctx, map)}`);
    return undefined;
  }
  const position = positionOf(ctx, map) ?? at;
  const seen = new Map<string, SourcePosition>();
  for (const pair of map.items) {
    const keyNode = resolveAlias(ctx, pair.key);
    const keyAt = positionOf(ctx, pair.key) ?? position;
    const key = readScalarText(ctx, keyNode);
    if (key === undefined) {
      reportError(ctx, keyAt, path, `expected a key name, found ${describeNode(ctx, keyNode)}`);
      continue;
    }
    const keyPath = joinPath(path, key);
    const first = seen.get(key);
    if (first !== undefined) {
      reportError(
        ctx,
        keyAt,
        keyPath,
        `duplicate key; \`${key}\` is already set at ${ctx.file}:${first.line}:${first.column}`,
      );
      continue;
    }
    seen.set(key, keyAt);
    const valueAt = isNullValue(ctx, pair.value) ? keyAt : (positionOf(ctx, pair.value) ?? keyAt);
    readEntry({ key, keyAt, keyPath, value: pair.value, valueAt });
  }
  return position;
}

/**
 * Reads a map against its schema: every key is checked (unknown keys and duplicates are reported where they
 * stand) and read by its own reader, so every problem in the map is reported, not just the first.
 */
export function readMap<S extends MapSchema>(
  ctx: ReadContext,
  node: unknown,
  at: SourcePosition,
  path: string,
  schema: S,
  what: string,
): MapRead<S> | undefined {
  const values: Record<string, unknown> = {};
  const keys: Record<string, SourcePosition> = {};
  const valuesAt: Record<string, SourcePosition> = {};
  const known = Object.keys(schema);
  const position = readEntries(ctx, node, at, path, what, ({ key, keyAt, keyPath, value, valueAt }) => {
    const spec = Object.hasOwn(schema, key) ? schema[key] : undefined;
    if (spec === undefined) {
      reportError(ctx, keyAt, keyPath, describeUnknownKey(key, known));
      return;
    }
    keys[key] = keyAt;
    valuesAt[key] = valueAt;
    const read = spec.read(ctx, value, valueAt, keyPath);
    if (read !== undefined) values[key] = read;
  });
  if (position === undefined) return undefined;
  for (const [key, spec] of Object.entries(schema)) {
    if (spec.required && keys[key] === undefined)
      reportError(ctx, position, path, `expected the key \`${key}\`, found none`);
  }
  return {
    values: values as MapValues<S>,
    keys: keys as MapRead<S>["keys"],
    valuesAt: valuesAt as MapRead<S>["valuesAt"],
    position,
  };
}

/** Reads each item of a list with `readItem`; reports a value that is not a list. */
export function readList<T>(
  ctx: ReadContext,
  node: unknown,
  at: SourcePosition,
  path: string,
  what: string,
  readItem: FieldReader<T>,
): T[] | undefined {
  const list = resolveAlias(ctx, node);
  if (!isSeqNode(ctx, list)) {
    reportError(ctx, at, path, `expected ${what}, found ${describeNode(ctx, list)}`);
    return undefined;
  }
  const items: T[] = [];
  let failed = false;
  list.items.forEach((item, index) => {
    const value = readItem(ctx, item, positionOf(ctx, item) ?? at, indexPath(path, index));
    if (value === undefined) failed = true;
    else items.push(value);
  });
  return failed ? undefined : items;
}

/** Text: any non-null scalar, as written (see readScalarText). */
export const readText: FieldReader<string> = (ctx, node, at, path) => {
  const resolved = resolveAlias(ctx, node);
  const text = readScalarText(ctx, resolved);
  if (text === undefined) reportError(ctx, at, path, `expected a string, found ${describeNode(ctx, resolved)}`);
  return text;
};

/** Text that is not empty or only blanks. */
export const readNonEmptyText: FieldReader<string> = (ctx, node, at, path) => {
  const text = readText(ctx, node, at, path);
  if (text === undefined) return undefined;
  if (text.trim() === "") {
    reportError(ctx, at, path, "expected a non-empty string, found an empty one");
    return undefined;
  }
  return text;
};

/** A string or a list of strings (Tangled's StringList): a single string is a list of one. */
export const readTextOrList: FieldReader<string[]> = (ctx, node, at, path) => {
  const resolved = resolveAlias(ctx, node);
  if (isSeqNode(ctx, resolved)) return readList(ctx, resolved, at, path, "a list of strings", readNonEmptyText);
  if (isScalarNode(ctx, resolved) && resolved.value !== null) {
    const text = readNonEmptyText(ctx, resolved, at, path);
    return text === undefined ? undefined : [text];
  }
  reportError(ctx, at, path, `expected a string or a list of strings, found ${describeNode(ctx, resolved)}`);
  return undefined;
};

/** YAML 1.1 words for booleans, which Tangled's decoder (yaml.v3) also takes for a boolean field. */
const BOOLEAN_WORDS: Readonly<Record<string, boolean>> = {
  y: true,
  Y: true,
  yes: true,
  Yes: true,
  YES: true,
  on: true,
  On: true,
  ON: true,
  n: false,
  N: false,
  no: false,
  No: false,
  NO: false,
  off: false,
  Off: false,
  OFF: false,
};

export const readBoolean: FieldReader<boolean> = (ctx, node, at, path) => {
  const resolved = resolveAlias(ctx, node);
  if (isScalarNode(ctx, resolved)) {
    if (typeof resolved.value === "boolean") return resolved.value;
    if (typeof resolved.value === "string" && resolved.type === "PLAIN" && Object.hasOwn(BOOLEAN_WORDS, resolved.value))
      return BOOLEAN_WORDS[resolved.value];
  }
  const text = readScalarText(ctx, resolved);
  reportError(
    ctx,
    at,
    path,
    `expected true or false, found ${text === undefined ? describeNode(ctx, resolved) : JSON.stringify(text)}`,
  );
  return undefined;
};

/** A whole number of at least 0, written as a YAML integer. */
export const readCount: FieldReader<number> = (ctx, node, at, path) => {
  const resolved = resolveAlias(ctx, node);
  if (
    isScalarNode(ctx, resolved) &&
    typeof resolved.value === "number" &&
    Number.isSafeInteger(resolved.value) &&
    resolved.value >= 0
  )
    return resolved.value;
  const text = readScalarText(ctx, resolved);
  reportError(
    ctx,
    at,
    path,
    `expected a whole number, 0 or more, found ${text === undefined ? describeNode(ctx, resolved) : JSON.stringify(text)}`,
  );
  return undefined;
};

/** A duration such as 90s, 10m or 1h30m, of at most a week, in milliseconds. */
export const readDurationMs: FieldReader<number> = (ctx, node, at, path) => {
  const text = readText(ctx, node, at, path);
  if (text === undefined) return undefined;
  const ms = parseDuration(text);
  if (ms === undefined)
    reportError(ctx, at, path, `expected a duration such as 90s, 10m or 1h30m, found ${JSON.stringify(text)}`);
  else if (ms > MAX_DURATION_MS)
    reportError(ctx, at, path, `expected a duration of at most 168h (a week), found ${JSON.stringify(text)}`);
  else return ms;
  return undefined;
};

/** A reader of text that must match `pattern`; `expected` says what it should look like. */
export function readMatching(pattern: RegExp, expected: string): FieldReader<string> {
  return (ctx, node, at, path) => {
    const text = readText(ctx, node, at, path);
    if (text === undefined) return undefined;
    if (pattern.test(text)) return text;
    reportError(ctx, at, path, `expected ${expected}, found ${JSON.stringify(text)}`);
    return undefined;
  };
}

/** A key whose empty value (`environment:` with nothing after it) means the same as leaving the key out, as in Tangled. */
export function allowEmpty<T>(read: FieldReader<T>): FieldReader<T | null> {
  return (ctx, node, at, path) => (isNullValue(ctx, resolveAlias(ctx, node)) ? null : read(ctx, node, at, path));
}
