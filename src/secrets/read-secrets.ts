// Reads the run's secrets from a dotenv file and from --secret-env variables; errors never show a secret value.
import { statSync } from "node:fs";
import { parse } from "dotenv";
import { InputError } from "../core/errors.js";
import { readBoundedTextFile, type FileKind } from "../core/read-bounded-file.js";
import { SECRET_NAME_PATTERN, type Secret } from "./secret.js";

export type { Secret } from "./secret.js";

/** The largest secrets file read: a dotenv file of tokens is a few KiB. */
export const MAX_SECRETS_FILE_BYTES = 1024 * 1024;
const SECRETS_FILE: FileKind = { maxBytes: MAX_SECRETS_FILE_BYTES, what: "a secrets file" };

const NAME_RULE = `a secret name must match ${SECRET_NAME_PATTERN.source}`;
const EMPTY_RULE = "an empty secret would mask everything";

/** `NAME=` at the start of a line, after optional blanks and `export `; the name is checked afterwards. */
const ENTRY_START = /^[^\S\n]*(?:export[^\S\n]+)?([^\s=]*)[^\S\n]*=[^\S\n]*/;
/**
 * A quoted value as dotenv reads it (the same quoted patterns, a backslash-quote does not close), followed only by
 * blanks and an optional comment up to the end of its last line.
 */
const QUOTED: Readonly<Record<string, RegExp>> = {
  '"': /"(?:\\"|[^"])*"[^\S\n]*(?:#[^\n]*)?(?=\n|$)/y,
  "'": /'(?:\\'|[^'])*'[^\S\n]*(?:#[^\n]*)?(?=\n|$)/y,
  "`": /`(?:\\`|[^`])*`[^\S\n]*(?:#[^\n]*)?(?=\n|$)/y,
};

/**
 * Parses a dotenv secrets file: `NAME=value`, `export NAME=value`, values in single, double or backtick quotes
 * (double-quoted ones may span lines and expand `\n`), `#` comment lines and comments after a blank. dotenv reads
 * the values; a line scanner first finds each entry and refuses, with `fileName:line`, what dotenv would silently
 * skip or misread: a line that is not an entry, a bad name, an unclosed quote or text after the closing quote, a
 * `#` inside an unquoted value (dotenv would cut the value there), an empty value and a name given twice.
 */
export function parseSecretsFile(text: string, fileName: string): Secret[] {
  const source = text.replace(/\r\n?/g, "\n"); // as dotenv does, so lines count the same
  const secrets: Secret[] = [];
  const firstLine = new Map<string, number>();
  let at = 0;
  let line = 1;
  while (at < source.length) {
    const lineEnd = findLineEnd(source, at);
    const entryEnd = readEntry(source, at, lineEnd, fileName, line, (name, value) => {
      const first = firstLine.get(name);
      if (first !== undefined)
        throw new InputError(`${name} is defined again (first on line ${first})`, `${fileName}:${line}`);
      if (value === "") throw new InputError(`${name} has an empty value: ${EMPTY_RULE}`, `${fileName}:${line}`);
      firstLine.set(name, line);
      secrets.push({ name, value });
    });
    for (let i = at; i < entryEnd; i++) if (source.charCodeAt(i) === 0x0a) line += 1;
    at = entryEnd + 1;
    line += 1;
  }
  return secrets;
}

function findLineEnd(source: string, from: number): number {
  const end = source.indexOf("\n", from);
  return end < 0 ? source.length : end;
}

/** Reads the entry (or blank or comment line) at `at`, hands it to `add` and returns where it ends. */
function readEntry(
  source: string,
  at: number,
  lineEnd: number,
  fileName: string,
  line: number,
  add: (name: string, value: string) => void,
): number {
  const location = `${fileName}:${line}`;
  const lineText = source.slice(at, lineEnd);
  if (/^\s*(?:#.*)?$/.test(lineText)) return lineEnd;
  const start = ENTRY_START.exec(lineText);
  if (!start) throw new InputError("not a secret entry: expected NAME=value", location);
  const name = start[1]!;
  if (!SECRET_NAME_PATTERN.test(name)) throw new InputError(`bad secret name: ${NAME_RULE}`, location);
  const valueAt = at + start[0].length;
  let end = lineEnd;
  const quoted = QUOTED[source.charAt(valueAt)];
  if (quoted) {
    quoted.lastIndex = valueAt;
    const match = quoted.exec(source);
    if (!match) throw new InputError(`the quoted value of ${name} has no closing quote, or text after it`, location);
    end = valueAt + match[0].length;
  } else {
    // After a blank, "#" starts a comment; anywhere else in an unquoted value dotenv would cut the value there.
    const hash = lineText.indexOf("#", start[0].length);
    if (hash >= 0 && !/\s/.test(lineText.charAt(hash - 1))) {
      throw new InputError(
        `the unquoted value of ${name} contains "#", which dotenv reads as the start of a comment: quote the value`,
        location,
      );
    }
  }
  const parsed = parse(source.slice(at, end));
  const names = Object.keys(parsed);
  if (names.length !== 1 || names[0] !== name) throw new InputError(`the entry of ${name} could not be read`, location);
  add(name, parsed[name]!);
  return end;
}

/**
 * Reads `--secret-env NAME` secrets (repeatable) from the given environment: each name must be valid, given once,
 * and its variable set and non-empty.
 */
export function readSecretsFromEnv(
  names: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): Secret[] {
  const secrets: Secret[] = [];
  const seen = new Set<string>();
  names.forEach((name, index) => {
    // A bad name may be a value pasted by mistake: it is not repeated.
    if (!SECRET_NAME_PATTERN.test(name)) throw new InputError(`--secret-env (number ${index + 1}): ${NAME_RULE}`);
    if (seen.has(name)) throw new InputError(`--secret-env ${name} is given twice`);
    seen.add(name);
    const value = env[name];
    if (value === undefined) throw new InputError(`--secret-env ${name}: the variable ${name} is not set`);
    if (value === "") throw new InputError(`--secret-env ${name}: the variable ${name} is empty: ${EMPTY_RULE}`);
    secrets.push({ name, value });
  });
  return secrets;
}

/** Joins secrets from several sources (a file, --secret-env), refusing a name that two of them give. */
export function mergeSecrets(
  sources: ReadonlyArray<{ readonly from: string; readonly secrets: readonly Secret[] }>,
): Secret[] {
  const from = new Map<string, string>();
  const merged: Secret[] = [];
  for (const source of sources) {
    for (const secret of source.secrets) {
      const other = from.get(secret.name);
      if (other !== undefined)
        throw new InputError(`secret ${secret.name} is given by both ${other} and ${source.from}`);
      from.set(secret.name, source.from);
      merged.push(secret);
    }
  }
  return merged;
}

/** Returns the warning to print when a secrets file's mode lets its group or others read it, else undefined. */
export function checkSecretsFileMode(mode: number, fileName: string): string | undefined {
  const group = (mode & 0o040) !== 0;
  const others = (mode & 0o004) !== 0;
  if (!group && !others) return undefined;
  const who = group && others ? "its group and others" : group ? "its group" : "others";
  return `secrets file ${fileName} is readable by ${who} (mode ${(mode & 0o777).toString(8).padStart(3, "0")}): chmod 600 ${fileName}`;
}

/**
 * Reads and parses a secrets file; `warning` is set when its mode lets others read it. Bounded like a workflow file:
 * a pipe, a device or a file past MAX_SECRETS_FILE_BYTES is refused before it is read.
 */
export async function readSecretsFile(path: string): Promise<{ secrets: Secret[]; warning: string | undefined }> {
  const read = readBoundedTextFile(path, SECRETS_FILE);
  if (!read.ok) throw new InputError(read.problem, read.at ? `${path}:${read.at.line}` : path);
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch (error) {
    throw new InputError(`cannot read secrets file (${(error as NodeJS.ErrnoException).code ?? "error"})`, path);
  }
  return { secrets: parseSecretsFile(read.text, path), warning: checkSecretsFileMode(mode, path) };
}
