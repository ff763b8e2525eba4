// Cache key templates (`deps-{{ hashFiles "package-lock.json" }}-{{ KNOTLESS_REF_NAME }}`): parsed once, rendered per run. Pure.
import { checkGlobSyntax } from "./glob-pattern.js";
import { suggestName } from "./suggest-key.js";

/** One piece of a template: text as written, a variable's value, or the hash of the checkout files some patterns match. */
export type KeyPart =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "variable"; readonly name: string }
  | { readonly kind: "hashFiles"; readonly patterns: readonly string[] };

export interface KeyTemplate {
  /** The template as written. */
  readonly source: string;
  readonly parts: readonly KeyPart[];
}

export type TemplateParse =
  | { readonly ok: true; readonly template: KeyTemplate }
  /** `character` is 1-based within the template, where the problem starts. */
  | { readonly ok: false; readonly message: string; readonly character: number };

/** The functions a template may call; `hashFiles` is the only one. */
export const TEMPLATE_FUNCTIONS: readonly string[] = ["hashFiles"];

/** A rendered key or restore key is at most this many characters. */
export const MAX_KEY_LENGTH = 512;

/**
 * The run variables a key may use (src/settings/run-variables.ts builds them), each with what gives it a value: the ones
 * from the trigger are set only when the run has that part of the trigger.
 */
export const RUN_VARIABLE_SOURCES: Readonly<Record<string, string>> = {
  CI: "always set",
  KNOTLESS_RUN_ID: "always set",
  KNOTLESS_WORKFLOW: "always set",
  KNOTLESS_EVENT: "set by --event",
  KNOTLESS_REF: "set by --ref, --branch or --tag",
  KNOTLESS_REF_NAME: "set by --ref, --branch or --tag",
  KNOTLESS_SHA: "set by --sha",
  KNOTLESS_REPO: "set by --repo",
  KNOTLESS_OUTPUTS: "always set",
  TANGLED_PIPELINE_ID: "set by --pipeline-id",
  TANGLED_PIPELINE_KIND: "set by --event",
  TANGLED_REPO_KNOT: "set by --knot",
  TANGLED_REPO_DID: "set by --repo-did",
  TANGLED_REPO_NAME: "set by --repo-name",
  TANGLED_REPO_DEFAULT_BRANCH: "set by --default-branch",
  TANGLED_REPO_URL: "set by --repo-url, or --knot, --repo-did and --repo-name together",
  TANGLED_REF: "set by --ref, --branch or --tag; for a pull request by --pr-source-branch",
  TANGLED_REF_NAME: "set by --ref, --branch or --tag; for a pull request by --pr-source-branch",
  TANGLED_REF_TYPE: "set by --ref, --branch or --tag; for a pull request by --pr-source-branch",
  TANGLED_SHA: "set by --sha; for a pull request by --pr-source-sha or --sha",
  TANGLED_COMMIT_SHA: "set by --sha; for a pull request by --pr-source-sha or --sha",
  TANGLED_PR_SOURCE_BRANCH: "set by --pr-source-branch (pull requests)",
  TANGLED_PR_TARGET_BRANCH: "set by --branch or --ref (pull requests)",
  TANGLED_PR_SOURCE_SHA: "set by --pr-source-sha or --sha (pull requests)",
  TANGLED_PR_ACTION: "set by --pr-action (pull requests)",
};

const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/y;
const BLANKS = /[ \t]*/y;

/** Characters a rendered key may not hold: C0 and C1 controls, DEL, line and paragraph separators. */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/u;

class TemplateSyntaxError extends Error {
  constructor(
    message: string,
    readonly index: number,
  ) {
    super(message);
  }
}

/** Why a hashFiles pattern is refused (it is relative to the checkout and stays inside it), or undefined. */
export function checkHashFilesPattern(pattern: string): string | undefined {
  if (pattern.startsWith("/"))
    return "is absolute; hashFiles patterns are relative to the checkout, such as package-lock.json or **/go.sum";
  if (pattern.split("/").includes("..")) return "has a `..` segment; hashFiles patterns stay inside the checkout";
  return checkGlobSyntax(pattern);
}

/** Reads a `"..."` pattern starting at `start` (the quote); `\"` and `\\` are escapes, any other `\` is kept for the glob. */
function readQuoted(source: string, start: number): { value: string; end: number } {
  let value = "";
  for (let i = start + 1; i < source.length; i++) {
    const char = source[i]!;
    if (char === '"') return { value, end: i + 1 };
    if (char === "\\" && (source[i + 1] === '"' || source[i + 1] === "\\")) {
      value += source[i + 1]!;
      i++;
    } else value += char;
  }
  throw new TemplateSyntaxError('a quoted pattern is not closed by `"`', start);
}

/** Reads what stands between `{{` and `}}`; `start` is just after `{{`. Returns the part and the index after `}}`. */
function readAction(source: string, start: number): { part: KeyPart; end: number } {
  const skipBlanks = (at: number): number => {
    BLANKS.lastIndex = at;
    BLANKS.exec(source);
    return BLANKS.lastIndex;
  };
  let at = skipBlanks(start);
  if (source.startsWith("}}", at))
    throw new TemplateSyntaxError(
      '`{{ }}` is empty; expected a variable such as {{ KNOTLESS_REF_NAME }} or {{ hashFiles "package-lock.json" }}',
      start - 2,
    );
  IDENTIFIER.lastIndex = at;
  const name = IDENTIFIER.exec(source)?.[0];
  if (name === undefined) {
    const found = source.slice(at).match(/^\S+?(?=\s|}}|$)/)?.[0] ?? "";
    throw new TemplateSyntaxError(
      `expected a variable name or hashFiles after \`{{\`, found ${JSON.stringify(found)}`,
      at,
    );
  }
  const nameAt = at;
  at = skipBlanks(at + name.length);
  if (source.startsWith("}}", at)) {
    if (TEMPLATE_FUNCTIONS.includes(name))
      throw new TemplateSyntaxError(
        `${name} needs at least one quoted pattern, such as {{ ${name} "package-lock.json" }}`,
        nameAt,
      );
    return { part: { kind: "variable", name }, end: at + 2 };
  }
  if (at >= source.length) throw new TemplateSyntaxError("`{{` is not closed by `}}`", start - 2);
  if (!TEMPLATE_FUNCTIONS.includes(name)) {
    if (!/["']/.test(source[at]!))
      throw new TemplateSyntaxError(
        `expected \`}}\` after ${name}, found ${JSON.stringify(source.slice(at).match(/^\S+?(?=\s|}}|$)/)?.[0] ?? "")}`,
        at,
      );
    const suggestion = suggestName(name, TEMPLATE_FUNCTIONS);
    throw new TemplateSyntaxError(
      `unknown function \`${name}\`; ${suggestion !== undefined ? `did you mean \`${suggestion}\`?` : "the one function is hashFiles"}`,
      nameAt,
    );
  }
  const patterns: string[] = [];
  while (!source.startsWith("}}", at)) {
    if (at >= source.length) throw new TemplateSyntaxError("`{{` is not closed by `}}`", start - 2);
    const char = source[at]!;
    if (char !== '"')
      throw new TemplateSyntaxError(
        char === "'"
          ? 'quote each pattern with double quotes: "package-lock.json"'
          : `expected a pattern in double quotes, found ${JSON.stringify(char)}`,
        at,
      );
    const quoted = readQuoted(source, at);
    const problem = checkHashFilesPattern(quoted.value);
    if (problem !== undefined)
      throw new TemplateSyntaxError(`the pattern ${JSON.stringify(quoted.value)} ${problem}`, at);
    patterns.push(quoted.value);
    at = skipBlanks(quoted.end);
    if (at === quoted.end && at < source.length && !source.startsWith("}}", at))
      throw new TemplateSyntaxError("expected a blank between two patterns", at);
  }
  return { part: { kind: "hashFiles", patterns }, end: at + 2 };
}

/**
 * Parses a key template: text with `{{ NAME }}` (a variable) and `{{ hashFiles "pattern" ... }}` (one or more
 * patterns in double quotes, relative to the checkout) actions; blanks inside `{{ }}` are optional. A `}}` outside an
 * action, an unclosed `{{`, an unknown function, a bad pattern: each is an error with the character it starts at.
 */
export function parseKeyTemplate(source: string): TemplateParse {
  const parts: KeyPart[] = [];
  let text = "";
  try {
    for (let i = 0; i < source.length;) {
      if (source.startsWith("{{", i)) {
        const action = readAction(source, i + 2);
        if (text !== "") parts.push({ kind: "text", text });
        text = "";
        parts.push(action.part);
        i = action.end;
      } else if (source.startsWith("}}", i)) {
        throw new TemplateSyntaxError("a `}}` without its `{{`", i);
      } else text += source[i++]!;
    }
  } catch (error) {
    if (error instanceof TemplateSyntaxError) return { ok: false, message: error.message, character: error.index + 1 };
    throw error;
  }
  if (text !== "") parts.push({ kind: "text", text });
  return { ok: true, template: { source, parts } };
}

/** The variables a template uses, each once, in order. */
export function listTemplateVariables(template: KeyTemplate): string[] {
  const names = template.parts.flatMap((part) => (part.kind === "variable" ? [part.name] : []));
  return [...new Set(names)];
}

/** The pattern lists of a template's hashFiles calls, in order. */
export function listHashFilesCalls(template: KeyTemplate): Array<readonly string[]> {
  return template.parts.flatMap((part) => (part.kind === "hashFiles" ? [part.patterns] : []));
}

/** How a hashFiles call's patterns identify its hash in KeyInputs.fileHashes: the same list, the same hash. */
export function identifyHashFilesCall(patterns: readonly string[]): string {
  return JSON.stringify(patterns);
}

/** What a template is rendered with. */
export interface KeyInputs {
  /** The run's variables: the run variables, then the workflow's environment (a later name wins). */
  readonly variables: ReadonlyMap<string, string>;
  /** The hash of each hashFiles call, by identifyHashFilesCall(patterns) (src/cache/hash-files.ts makes them). */
  readonly fileHashes: ReadonlyMap<string, string>;
}

export type KeyRender = { readonly ok: true; readonly key: string } | { readonly ok: false; readonly message: string };

/** Why a rendered key cannot be used (empty, unprintable, too long), or undefined. */
export function checkRenderedKey(key: string): string | undefined {
  if (key === "") return "renders empty";
  const bad = UNPRINTABLE.exec(key);
  if (bad !== null)
    return `renders with the unprintable character ${JSON.stringify(bad[0])} at character ${bad.index + 1}: ${JSON.stringify(key)}`;
  const length = [...key].length;
  if (length > MAX_KEY_LENGTH)
    return `renders ${length} characters long, more than the ${MAX_KEY_LENGTH} a key may have`;
  return undefined;
}

/** Renders a template; refuses a variable the run does not set and a key checkRenderedKey refuses. */
export function renderKeyTemplate(template: KeyTemplate, inputs: KeyInputs): KeyRender {
  let key = "";
  for (const part of template.parts) {
    if (part.kind === "text") key += part.text;
    else if (part.kind === "variable") {
      const value = inputs.variables.get(part.name);
      if (value === undefined) {
        const source = Object.hasOwn(RUN_VARIABLE_SOURCES, part.name) ? ` (${RUN_VARIABLE_SOURCES[part.name]})` : "";
        return { ok: false, message: `uses {{ ${part.name} }}, which this run does not set${source}` };
      }
      key += value;
    } else {
      const hash = inputs.fileHashes.get(identifyHashFilesCall(part.patterns));
      if (hash === undefined)
        return { ok: false, message: `uses hashFiles, but the files of the checkout were not hashed for this run` };
      key += hash;
    }
  }
  const problem = checkRenderedKey(key);
  return problem === undefined ? { ok: true, key } : { ok: false, message: problem };
}
