// The `artifacts:` key: a list of {name, paths, when, required}, each name a directory of its own, each path a glob under /outputs or /work.
import type { ArtifactWhen } from "./artifact-types.js";
import {
  field,
  readBoolean,
  readMap,
  readNonEmptyText,
  readText,
  readTextOrList,
  type FieldReader,
  type MapSchema,
} from "./field-readers.js";
import { checkGlobSyntax } from "./glob-pattern.js";
import { MAX_PATHS } from "./cache-schema.js";
import { readArtifactPath } from "./pod-path.js";
import { describeNode, indexPath, isSeqNode, positionOf, reportError, resolveAlias } from "./read-context.js";
import { suggestName } from "./suggest-key.js";
import type { SourcePosition, WorkflowArtifact } from "./workflow-types.js";

/** Most `artifacts:` entries a workflow may have. */
export const MAX_ARTIFACTS = 32;
const MAX_NAME_LENGTH = 100;
/** A name that is one safe path segment: it becomes `<out>/artifacts/<name>/`. */
const ARTIFACT_NAME = /^[A-Za-z0-9._-]+$/;
export const ARTIFACT_WHENS: readonly ArtifactWhen[] = ["success", "failure", "always"];

const readArtifactName: FieldReader<string> = (ctx, node, at, path) => {
  const name = readNonEmptyText(ctx, node, at, path);
  if (name === undefined) return undefined;
  if (!ARTIFACT_NAME.test(name) || name === "." || name === "..") {
    reportError(
      ctx,
      at,
      path,
      `expected a name of letters, digits, \`.\`, \`_\` and \`-\` (it becomes a directory of its own), other than . and .., found ${JSON.stringify(name)}`,
    );
    return undefined;
  }
  if (name.length > MAX_NAME_LENGTH) {
    reportError(ctx, at, path, `expected a name of at most ${MAX_NAME_LENGTH} characters, found ${name.length}`);
    return undefined;
  }
  return name;
};

/** `paths`: a glob pattern or a list of them, at least one; absolute under /outputs or /work, or relative (under /work). */
const readArtifactPaths: FieldReader<string[]> = (ctx, node, at, path) => {
  const texts = readTextOrList(ctx, node, at, path);
  if (texts === undefined) return undefined;
  if (texts.length === 0) {
    reportError(
      ctx,
      at,
      path,
      "expected at least one pattern, such as /outputs/report.html or dist/*.tgz, found an empty list",
    );
    return undefined;
  }
  if (texts.length > MAX_PATHS) {
    reportError(ctx, at, path, `expected at most ${MAX_PATHS} patterns, found ${texts.length}`);
    return undefined;
  }
  const resolved = resolveAlias(ctx, node);
  const patterns: string[] = [];
  let failed = false;
  texts.forEach((text, index) => {
    const item = isSeqNode(ctx, resolved) ? resolved.items[index] : undefined;
    const itemAt = positionOf(ctx, item) ?? at;
    const itemPath = isSeqNode(ctx, resolved) ? indexPath(path, index) : path;
    const read = readArtifactPath(text);
    const problem = "problem" in read ? read.problem : checkGlobSyntax(read.path);
    if (problem !== undefined) {
      reportError(
        ctx,
        itemAt,
        itemPath,
        `expected a glob pattern under /outputs or /work (a relative one is under /work), such as /outputs/**/*.xml; ${JSON.stringify(text)} ${problem}`,
      );
      failed = true;
    } else if ("path" in read) patterns.push(read.path);
  });
  return failed ? undefined : patterns;
};

const readWhen: FieldReader<ArtifactWhen> = (ctx, node, at, path) => {
  const text = readText(ctx, node, at, path);
  if (text === undefined) return undefined;
  const when = ARTIFACT_WHENS.find((candidate) => candidate === text);
  if (when !== undefined) return when;
  const suggestion = suggestName(text, ARTIFACT_WHENS);
  reportError(
    ctx,
    at,
    path,
    `expected one of ${ARTIFACT_WHENS.join(", ")}; found ${JSON.stringify(text)}${suggestion ? `; did you mean \`${suggestion}\`?` : ""}`,
  );
  return undefined;
};

const ARTIFACT_KEYS = {
  name: field(readArtifactName, { required: true }),
  paths: field(readArtifactPaths, { required: true }),
  when: field(readWhen),
  required: field(readBoolean),
} satisfies MapSchema;

const ARTIFACT_EXAMPLE = "{name: report, paths: [/outputs/report.html], when: always}";

/** `artifacts`: at most MAX_ARTIFACTS entries with distinct names; `when` defaults to success, `required` to false. */
export const readArtifacts: FieldReader<WorkflowArtifact[]> = (ctx, node, at, path) => {
  const list = resolveAlias(ctx, node);
  if (!isSeqNode(ctx, list)) {
    reportError(
      ctx,
      at,
      path,
      `expected a list of artifacts such as - ${ARTIFACT_EXAMPLE}, found ${describeNode(ctx, list)}`,
    );
    return undefined;
  }
  if (list.items.length > MAX_ARTIFACTS)
    reportError(ctx, at, path, `expected at most ${MAX_ARTIFACTS} artifacts, found ${list.items.length}`);
  const artifacts: WorkflowArtifact[] = [];
  const named = new Map<string, { path: string; at: SourcePosition }>();
  list.items.forEach((item, index) => {
    const artifactPath = indexPath(path, index);
    const read = readMap(
      ctx,
      item,
      positionOf(ctx, item) ?? at,
      artifactPath,
      ARTIFACT_KEYS,
      `an artifact such as ${ARTIFACT_EXAMPLE}`,
    );
    if (read === undefined) return;
    const { name, paths, when, required } = read.values;
    if (name !== undefined) {
      const nameAt = read.valuesAt.name ?? read.position;
      // Case is ignored: `Report` and `report` are one directory on a case-insensitive file system.
      const first = named.get(name.toLowerCase());
      if (first !== undefined) {
        reportError(
          ctx,
          nameAt,
          `${artifactPath}.name`,
          `duplicate artifact name ${JSON.stringify(name)}, already used by ${first.path} at ${ctx.file}:${first.at.line}:${first.at.column} (names that differ only in case count as one); each artifact gets a directory of its own`,
        );
        return;
      }
      named.set(name.toLowerCase(), { path: artifactPath, at: nameAt });
    }
    if (name === undefined || paths === undefined) return;
    artifacts.push({ name, paths, when: when ?? "success", required: required ?? false, position: read.position });
  });
  return artifacts;
};
