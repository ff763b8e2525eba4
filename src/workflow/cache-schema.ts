// The `caches:` key: a list of {key, restore-keys, paths}, keys parsed as templates, paths checked where they land in the pod.
import { parseKeyTemplate } from "./render-key.js";
import { field, readMap, readNonEmptyText, readTextOrList, type FieldReader, type MapSchema } from "./field-readers.js";
import { readCachePath, isUnder } from "./pod-path.js";
import {
  describeNode,
  indexPath,
  isMapNode,
  isSeqNode,
  positionOf,
  reportError,
  reportWarning,
  resolveAlias,
  type ReadContext,
} from "./read-context.js";
import type { KeyTemplateAt, SourcePosition, WorkflowCache } from "./workflow-types.js";

export interface ParsedCaches {
  /** The entries read without a problem. */
  readonly caches: readonly WorkflowCache[];
  /** Every key and restore key that parsed, of good entries and bad ones: the checks that need the whole file look at each. */
  readonly templates: readonly KeyTemplateAt[];
}

/** Most `caches:` entries a workflow may have; each costs a lookup, a restore and maybe a save per run. */
export const MAX_CACHES = 16;
/** Most fallback prefixes of one cache. */
export const MAX_RESTORE_KEYS = 16;
/** Most paths of one cache, or patterns of one artifact. */
export const MAX_PATHS = 32;

const KEY_EXAMPLE = `deps-{{ hashFiles "package-lock.json" }}`;

/** The items of a string-or-list value, each with its place and key path; a single string stands where the value does. */
function listItems(
  ctx: ReadContext,
  node: unknown,
  at: SourcePosition,
  path: string,
  texts: readonly string[],
): Array<{ text: string; at: SourcePosition; path: string }> {
  const resolved = resolveAlias(ctx, node);
  if (!isSeqNode(ctx, resolved)) return texts.map((text) => ({ text, at, path }));
  return texts.map((text, index) => ({
    text,
    at: positionOf(ctx, resolved.items[index]) ?? at,
    path: indexPath(path, index),
  }));
}

/** Parses one template, reporting a syntax error at the template's place with the character it starts at. */
function parseTemplateAt(ctx: ReadContext, text: string, at: SourcePosition, path: string): KeyTemplateAt | undefined {
  const parsed = parseKeyTemplate(text);
  if (parsed.ok) return { template: parsed.template, position: at, path };
  reportError(ctx, at, path, `in ${JSON.stringify(text)} at character ${parsed.character}: ${parsed.message}`);
  return undefined;
}

/** `key`: a non-empty template. A YAML flow map (`key: {{ ... }}` unquoted) gets told to quote it. */
const readKeyTemplate: FieldReader<KeyTemplateAt> = (ctx, node, at, path) => {
  const resolved = resolveAlias(ctx, node);
  if (isMapNode(ctx, resolved)) {
    reportError(
      ctx,
      at,
      path,
      `expected a key template such as ${KEY_EXAMPLE}, found a map; in YAML a value that starts with \`{\` must be quoted: key: '{{ hashFiles "package-lock.json" }}'`,
    );
    return undefined;
  }
  const text = readNonEmptyText(ctx, node, at, path);
  return text === undefined ? undefined : parseTemplateAt(ctx, text, at, path);
};

/** `restore-keys`: a template or a list of them, each non-empty. */
const readRestoreKeys: FieldReader<KeyTemplateAt[]> = (ctx, node, at, path) => {
  const texts = readTextOrList(ctx, node, at, path);
  if (texts === undefined) return undefined;
  if (texts.length > MAX_RESTORE_KEYS) {
    reportError(ctx, at, path, `expected at most ${MAX_RESTORE_KEYS} restore keys, found ${texts.length}`);
    return undefined;
  }
  // A bad template is reported; the good ones are still handed on, so the checks of the whole file see them too.
  return listItems(ctx, node, at, path, texts).flatMap(
    (item) => parseTemplateAt(ctx, item.text, item.at, item.path) ?? [],
  );
};

interface CachePathAt {
  readonly path: string;
  readonly at: SourcePosition;
  readonly keyPath: string;
}

/** `paths`: a path or a list of them, at least one; none inside another (it would be kept twice). */
const readCachePaths: FieldReader<CachePathAt[]> = (ctx, node, at, path) => {
  const texts = readTextOrList(ctx, node, at, path);
  if (texts === undefined) return undefined;
  if (texts.length === 0) {
    reportError(ctx, at, path, "expected at least one path, such as node_modules or /root/.npm, found an empty list");
    return undefined;
  }
  if (texts.length > MAX_PATHS) {
    reportError(ctx, at, path, `expected at most ${MAX_PATHS} paths, found ${texts.length}`);
    return undefined;
  }
  const paths: CachePathAt[] = [];
  let failed = false;
  for (const item of listItems(ctx, node, at, path, texts)) {
    const read = readCachePath(item.text);
    if ("problem" in read) {
      reportError(
        ctx,
        item.at,
        item.path,
        `expected a path in the pod, absolute or relative to /work, such as node_modules; ${JSON.stringify(item.text)} ${read.problem}`,
      );
      failed = true;
      continue;
    }
    const outer = paths.find((other) => isUnder(read.path, other.path) || isUnder(other.path, read.path));
    if (outer !== undefined) {
      const how =
        outer.path === read.path ? "is the same path as" : isUnder(read.path, outer.path) ? "is inside" : "holds";
      reportError(
        ctx,
        item.at,
        item.path,
        `${JSON.stringify(item.text)} (${read.path}) ${how} ${outer.keyPath} (${outer.path}); list each directory once`,
      );
      failed = true;
      continue;
    }
    paths.push({ path: read.path, at: item.at, keyPath: item.path });
  }
  return failed ? undefined : paths;
};

const CACHE_KEYS = {
  key: field(readKeyTemplate, { required: true }),
  "restore-keys": field(readRestoreKeys),
  paths: field(readCachePaths, { required: true }),
} satisfies MapSchema;

const CACHE_EXAMPLE = `{key: '${KEY_EXAMPLE}', paths: [node_modules]}`;

/**
 * `caches`: at most MAX_CACHES entries; two entries may not have the same key template (the second could never be
 * saved: keys are immutable), and a path kept by two caches is worth a warning (restored twice, saved twice).
 */
export const readCaches: FieldReader<ParsedCaches> = (ctx, node, at, path) => {
  const list = resolveAlias(ctx, node);
  if (!isSeqNode(ctx, list)) {
    reportError(
      ctx,
      at,
      path,
      `expected a list of caches such as - ${CACHE_EXAMPLE}, found ${describeNode(ctx, list)}`,
    );
    return undefined;
  }
  if (list.items.length > MAX_CACHES)
    reportError(ctx, at, path, `expected at most ${MAX_CACHES} caches, found ${list.items.length}`);
  const caches: WorkflowCache[] = [];
  const templates: KeyTemplateAt[] = [];
  const keyed = new Map<string, KeyTemplateAt>();
  const kept: CachePathAt[] = [];
  list.items.forEach((item, index) => {
    const cachePath = indexPath(path, index);
    const read = readMap(
      ctx,
      item,
      positionOf(ctx, item) ?? at,
      cachePath,
      CACHE_KEYS,
      `a cache such as ${CACHE_EXAMPLE}`,
    );
    if (read === undefined) return;
    const { key, paths } = read.values;
    templates.push(...(key ? [key] : []), ...(read.values["restore-keys"] ?? []));
    if (key !== undefined) {
      const first = keyed.get(key.template.source);
      if (first !== undefined)
        reportError(
          ctx,
          key.position,
          key.path,
          `the same key as ${first.path} at ${ctx.file}:${first.position.line}:${first.position.column}; keys are immutable once saved, so only one of them could ever be saved`,
        );
      else keyed.set(key.template.source, key);
    }
    for (const entry of paths ?? []) {
      const other = kept.find((earlier) => isUnder(entry.path, earlier.path) || isUnder(earlier.path, entry.path));
      if (other !== undefined)
        reportWarning(
          ctx,
          entry.at,
          entry.keyPath,
          `${entry.path} overlaps ${other.keyPath} (${other.path}): both caches restore and save these files`,
        );
    }
    kept.push(...(paths ?? []));
    if (key === undefined || paths === undefined) return;
    caches.push({
      key,
      restoreKeys: read.values["restore-keys"] ?? [],
      paths: paths.map((entry) => entry.path),
      position: read.position,
    });
  });
  return { caches, templates };
};
