// Tells a workflow file written for another CI system (engine: tack, GitHub's `run:` steps) from a broken Tangled one.
import { isMapNode, isSeqNode, positionOf, readScalarText, resolveAlias, type ReadContext } from "./read-context.js";
import { suggestName } from "./suggest-key.js";
import { ENGINES } from "./workflow-schema.js";
import type { SourcePosition } from "./workflow-types.js";

/** A file for another system: which one, and where the file says so. */
export interface ForeignWorkflow {
  /** `tack`, `pixi`, ... or `github-actions`. */
  readonly system: string;
  readonly message: string;
  readonly at: SourcePosition;
  readonly path: string;
}

/** The value of a top-level key, or undefined. */
function findKey(ctx: ReadContext, map: unknown, name: string): { value: unknown; at: SourcePosition } | undefined {
  if (!isMapNode(ctx, map)) return undefined;
  const pair = map.items.find((item) => readScalarText(ctx, resolveAlias(ctx, item.key)) === name);
  return pair
    ? {
        value: resolveAlias(ctx, pair.value),
        at: positionOf(ctx, pair.value) ?? positionOf(ctx, pair.key) ?? { line: 1, column: 1 },
      }
    : undefined;
}

/**
 * A file whose `engine` is a word no Tangled engine is close to (a typo such as `nixey` stays an error with its
 * suggestion), or whose steps all say GitHub Actions' `run:` and none Tangled's `command:`. Undefined otherwise.
 */
export function findForeignWorkflow(ctx: ReadContext, contents: unknown): ForeignWorkflow | undefined {
  const top = resolveAlias(ctx, contents);
  const engine = findKey(ctx, top, "engine");
  const written = engine ? readScalarText(ctx, engine.value) : undefined;
  if (
    engine &&
    written !== undefined &&
    !Object.hasOwn(ENGINES, written) &&
    suggestName(written, Object.keys(ENGINES)) === undefined
  ) {
    return {
      system: written,
      at: engine.at,
      path: "engine",
      message: `this workflow is for another engine (engine: ${written}), not one this runner runs (kubernetes, nixery, microvm); it is not run here`,
    };
  }
  const steps = findKey(ctx, top, "steps");
  if (steps && isSeqNode(ctx, steps.value) && steps.value.items.length > 0) {
    const maps = steps.value.items.map((item) => resolveAlias(ctx, item));
    const withRun = maps.filter((map) => findKey(ctx, map, "run") !== undefined);
    if (withRun.length === maps.length && maps.every((map) => findKey(ctx, map, "command") === undefined)) {
      return {
        system: "github-actions",
        at: positionOf(ctx, maps[0]) ?? steps.at,
        path: "steps",
        message:
          "this workflow is written for GitHub Actions (steps with `run:`, where Tangled's say `command:`); it is not run here",
      };
    }
  }
  return undefined;
}
