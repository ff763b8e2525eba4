// The trigger the caller describes (run's --event and its flags, serve's `trigger`), validated and named as the caller names it.
import { InputError } from "../core/errors.js";
import { PULL_REQUEST_ACTIONS, type Trigger } from "../workflow/match-trigger.js";

/** The trigger as the caller got it: every field optional, unvalidated (the changed files already read and checked). */
export type RawTrigger = { readonly [K in keyof Trigger]?: Trigger[K] };

/** How the caller names the trigger's fields in its messages: `--event` on the command line, `trigger.event` in serve. */
export interface TriggerNames {
  readonly of: (key: keyof Trigger) => string;
  /** Said after a ref that is not a full one: how else the caller can name a branch or tag (the CLI's --branch / --tag). */
  readonly refAlternative?: string;
}

/** The trigger's text fields that say where the change is. */
const REF_KEYS = ["ref", "branch", "tag", "sha", "repo"] as const;
/** The pull request's text fields, and what Tangled's run variables say of the repository and pipeline. */
const MORE_KEYS = [
  "prAction",
  "prSourceBranch",
  "prSourceSha",
  "knot",
  "repoDid",
  "repoName",
  "defaultBranch",
  "repoUrl",
  "pipelineId",
] as const;
type TextKey = (typeof REF_KEYS)[number] | (typeof MORE_KEYS)[number];
/** Every text field of a trigger but the event: what a caller's raw input may carry. */
export const TRIGGER_TEXT_KEYS: readonly TextKey[] = [...REF_KEYS, ...MORE_KEYS];

/**
 * Reads the trigger: undefined without an event (then `when` is not evaluated), and an InputError for a field given
 * without an event, a malformed event or ref, both a ref and a branch or tag, an empty field or one with control
 * characters, an unknown pull request action, or a pull request's field with another event.
 */
export function readTrigger(raw: RawTrigger, names: TriggerNames): Trigger | undefined {
  const { of } = names;
  const given = TRIGGER_TEXT_KEYS.filter((key) => raw[key] !== undefined);
  if (raw.event === undefined) {
    const described = raw.changedFiles !== undefined ? "changedFiles" : given[0];
    if (described !== undefined)
      throw new InputError(
        `${of(described)} describes a trigger: give ${of("event")} too (push, pull_request, manual, ...)`,
      );
    return undefined;
  }
  if (!/^[a-z][a-z0-9_]{0,63}$/.test(raw.event))
    throw new InputError(
      `${of("event")} expects an event name such as push, pull_request or manual, got ${JSON.stringify(raw.event)}`,
    );
  if (raw.ref !== undefined && (raw.branch !== undefined || raw.tag !== undefined))
    throw new InputError(
      `${of("ref")} names the branch or tag already: give ${of("ref")}, or ${of("branch")} / ${of("tag")}, not both`,
    );
  if (raw.branch !== undefined && raw.tag !== undefined)
    throw new InputError(`${of("branch")} and ${of("tag")}: a trigger has one ref; give one of them`);
  if (raw.ref !== undefined && !raw.ref.startsWith("refs/"))
    throw new InputError(
      `${of("ref")} expects a full ref such as refs/heads/main or refs/tags/v1.0, got ${JSON.stringify(raw.ref)}${names.refAlternative ? ` (${names.refAlternative})` : ""}`,
    );
  for (const key of given) {
    if (raw[key] === "" || /[\x00-\x1f\x7f]/.test(raw[key]!))
      throw new InputError(`${of(key)} expects a non-empty value without control characters`);
  }
  if (raw.prAction !== undefined && !PULL_REQUEST_ACTIONS.includes(raw.prAction))
    throw new InputError(
      `${of("prAction")} expects one of ${PULL_REQUEST_ACTIONS.join(", ")}, got ${JSON.stringify(raw.prAction)}`,
    );
  const prOnly = (["prAction", "prSourceBranch", "prSourceSha"] as const).find((key) => raw[key] !== undefined);
  if (prOnly !== undefined && raw.event !== "pull_request")
    throw new InputError(`${of(prOnly)} goes with ${of("event")} pull_request`);
  const pick = (keys: readonly TextKey[]): Partial<Trigger> =>
    Object.fromEntries(keys.flatMap((key) => (raw[key] !== undefined ? [[key, raw[key]]] : [])));
  // In the order the result records a trigger: the ref's fields, the changed files, the rest.
  return {
    event: raw.event,
    ...pick(REF_KEYS),
    ...(raw.changedFiles !== undefined ? { changedFiles: raw.changedFiles } : {}),
    ...pick(MORE_KEYS),
  };
}
