// Decides whether a workflow's `when` matches a trigger, as Tangled does, and says why in words.
import { createRequire } from "node:module";
import type picomatch from "picomatch";
import { checkGlobPattern, toPicomatchPattern } from "./glob-pattern.js";
import type { WhenConstraint } from "./workflow-types.js";

/** The pull request actions Tangled sends, and those a constraint without `types` matches (workflow/def.go). */
export const PULL_REQUEST_ACTIONS: readonly string[] = ["opened", "reopened", "synchronize", "closed", "merged"];
export const DEFAULT_PULL_REQUEST_ACTIONS: readonly string[] = ["opened", "reopened", "synchronize"];

/** What started the run. `ref` (refs/heads/X or refs/tags/Y) gives the branch or tag unless they are given. */
export interface Trigger {
  readonly event: string;
  readonly ref?: string;
  /** A push's branch, or a pull request's target branch. */
  readonly branch?: string;
  readonly tag?: string;
  /** The commit: a push's new head, a pull request's source head unless prSourceSha says otherwise. */
  readonly sha?: string;
  readonly repo?: string;
  /** Paths the change touched, relative to the repository's root; absent: not known, so `paths` is not evaluated. */
  readonly changedFiles?: readonly string[];
  /** A pull request's action (opened, reopened, synchronize, closed, merged); absent: opened, as Tangled takes it. */
  readonly prAction?: string;
  readonly prSourceBranch?: string;
  readonly prSourceSha?: string;
  /** What Tangled's run variables say of the repository and pipeline (src/settings/tangled-variables.ts). */
  readonly knot?: string;
  readonly repoDid?: string;
  readonly repoName?: string;
  readonly defaultBranch?: string;
  readonly repoUrl?: string;
  readonly pipelineId?: string;
}

export interface RefNames {
  readonly branch?: string;
  readonly tag?: string;
  /** The ref's short name: the branch, the tag, or the ref without `refs/`. */
  readonly refName: string;
}

export interface MatchOutcome {
  readonly matched: boolean;
  /** Which constraint matched, or why none did, e.g. `no constraint of when matched: branch "dev" is not one of main, release/**`. */
  readonly reason: string;
}

/**
 * picomatch options that give doublestar's reading, with the escaping in glob-pattern.ts: a dot is an ordinary
 * character (`*` matches `.x`), no POSIX classes, no literal-bracket fallback, no trailing-slash leniency, `/` the
 * only separator. A leading `!` and extglobs are escaped already; nonegate and noextglob say so once more.
 */
export const GLOB_OPTIONS: picomatch.PicomatchOptions = {
  dot: true,
  nonegate: true,
  noextglob: true,
  posix: false,
  literalBrackets: false,
  strictSlashes: true,
  windows: false,
};

/**
 * picomatch, required when a pattern is first matched: a static import would be hoisted into the bundled CLI's
 * start-up and cost every command, matching or not. (picomatch is a CommonJS package, so require is its loader.)
 */
export function loadPicomatch(): typeof picomatch {
  return createRequire(import.meta.url)("picomatch") as typeof picomatch;
}

/** refs/heads/X → branch X; refs/tags/Y → tag Y; any other ref only has a short name. */
export function deriveRefNames(ref: string): RefNames {
  if (ref.startsWith("refs/heads/"))
    return { branch: ref.slice("refs/heads/".length), refName: ref.slice("refs/heads/".length) };
  if (ref.startsWith("refs/tags/"))
    return { tag: ref.slice("refs/tags/".length), refName: ref.slice("refs/tags/".length) };
  return { refName: ref.startsWith("refs/") ? ref.slice("refs/".length) : ref };
}

/**
 * Whether `name` matches the glob `pattern` as Tangled's doublestar matches it; a malformed pattern matches nothing.
 * The regular expression is tested directly: picomatch's matcher would also take a name equal to the pattern
 * (`{a,b}` for the branch named "{a,b}"), which doublestar does not.
 */
export function matchGlob(pattern: string, name: string): boolean {
  if (checkGlobPattern(pattern) !== undefined) return false;
  return loadPicomatch().makeRe(toPicomatchPattern(pattern), GLOB_OPTIONS).test(name);
}

function listPatterns(patterns: readonly string[]): string {
  return patterns.length === 0 ? "(none listed)" : patterns.join(", ");
}

/** Checks one ref name against a constraint's patterns; the reason names what matched or what it was checked against. */
function matchRefName(
  kind: "branch" | "tag",
  name: string,
  patterns: readonly string[] | undefined,
): { matched: boolean; detail: string } {
  if (patterns === undefined || patterns.length === 0)
    return { matched: false, detail: `lists no \`${kind}\`, so ${kind} ${JSON.stringify(name)} cannot match` };
  const hit = patterns.find((pattern) => matchGlob(pattern, name));
  if (hit === undefined)
    return { matched: false, detail: `${kind} ${JSON.stringify(name)} is not one of ${listPatterns(patterns)}` };
  return {
    matched: true,
    detail:
      hit === name ? `${kind} ${JSON.stringify(name)}` : `${kind} ${JSON.stringify(name)} (${JSON.stringify(hit)})`,
  };
}

/**
 * One constraint: every field the trigger has must match (Tangled's Constraint.Match): the event must be listed;
 * a trigger with a branch needs a matching `branch` pattern, one with a tag a matching `tag` pattern; a ref that is
 * neither matches nothing. A constraint with only `event` therefore matches only triggers without a ref.
 */
function matchConstraint(constraint: WhenConstraint, trigger: Trigger): { matched: boolean; detail: string } {
  if (!constraint.event.includes(trigger.event))
    return {
      matched: false,
      detail: `event ${JSON.stringify(trigger.event)} is not one of ${listPatterns(constraint.event)}`,
    };
  const derived = trigger.ref === undefined ? undefined : deriveRefNames(trigger.ref);
  const branch = trigger.branch ?? derived?.branch;
  const tag = trigger.tag ?? derived?.tag;
  const details = [`event ${JSON.stringify(trigger.event)}`];
  if (branch === undefined && tag === undefined && derived !== undefined) {
    return { matched: false, detail: `ref ${JSON.stringify(trigger.ref)} is neither a branch nor a tag` };
  }
  for (const [kind, name, patterns] of [
    ["branch", branch, constraint.branch],
    ["tag", tag, constraint.tag],
  ] as const) {
    if (name === undefined) continue;
    const outcome = matchRefName(kind, name, patterns);
    if (!outcome.matched) return outcome;
    details.push(outcome.detail);
  }
  for (const check of [matchAction(constraint, trigger), matchPaths(constraint, trigger)]) {
    if (check === undefined) continue;
    if (!check.matched) return check;
    details.push(check.detail);
  }
  return { matched: true, detail: details.join(", ") };
}

/** A pull request's action against `types` (opened, reopened and synchronize without it); undefined for other events. */
function matchAction(constraint: WhenConstraint, trigger: Trigger): { matched: boolean; detail: string } | undefined {
  if (trigger.event !== "pull_request") return undefined;
  const action = trigger.prAction ?? "opened";
  const types = constraint.types ?? DEFAULT_PULL_REQUEST_ACTIONS;
  const listed =
    constraint.types === undefined ? `${types.join(", ")} (the default without \`types\`)` : types.join(", ");
  if (!types.includes(action))
    return { matched: false, detail: `pull request action ${JSON.stringify(action)} is not one of ${listed}` };
  return {
    matched: true,
    detail: `action ${JSON.stringify(action)}${trigger.prAction === undefined ? " (assumed: no --pr-action)" : ""}`,
  };
}

/**
 * `paths` against the changed files: one matching file is enough (Tangled's matchesAnyFile). When the trigger names
 * no changed files at all, the constraint is taken to match and the detail says it was assumed.
 */
function matchPaths(constraint: WhenConstraint, trigger: Trigger): { matched: boolean; detail: string } | undefined {
  const patterns = constraint.paths ?? [];
  if (patterns.length === 0) return undefined;
  if (trigger.changedFiles === undefined)
    return { matched: true, detail: "paths assumed to match: the trigger gave no changed files (--changed-file)" };
  for (const file of trigger.changedFiles) {
    const hit = patterns.find((pattern) => matchGlob(pattern, file));
    if (hit !== undefined)
      return { matched: true, detail: `changed file ${JSON.stringify(file)} (${JSON.stringify(hit)})` };
  }
  const count = trigger.changedFiles.length;
  return {
    matched: false,
    detail: `none of the ${count} changed ${count === 1 ? "file" : "files"} matches paths ${listPatterns(patterns)}`,
  };
}

/**
 * Whether a workflow runs for a trigger (Tangled's Workflow.Match): a manual trigger always matches, so does a
 * workflow without `when`; otherwise any one constraint matching is enough.
 */
export function matchWorkflow(when: readonly WhenConstraint[] | undefined, trigger: Trigger): MatchOutcome {
  if (trigger.event === "manual") return { matched: true, reason: "a manual trigger always matches" };
  if (when === undefined || when.length === 0)
    return { matched: true, reason: "no `when`: the workflow always matches" };
  const misses: string[] = [];
  for (const [index, constraint] of when.entries()) {
    const outcome = matchConstraint(constraint, trigger);
    if (outcome.matched) return { matched: true, reason: `when[${index}] matched: ${outcome.detail}` };
    misses.push(when.length === 1 ? outcome.detail : `when[${index}]: ${outcome.detail}`);
  }
  return { matched: false, reason: `no constraint of when matched: ${misses.join("; ")}` };
}
