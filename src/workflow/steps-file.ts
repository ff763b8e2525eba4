// Parses the steps file: one step per line, `name<TAB>script`; blank lines and `#` comments are ignored.
import { isUtf8 } from "node:buffer";
import { InputError } from "../core/errors.js";

/** One step of a workflow run: its name, the shell script it runs, and where it was declared. */
export interface StepSpec {
  readonly name: string;
  readonly script: string;
  /** `file:line` of its declaration, for messages. */
  readonly source: string;
  /**
   * The step's own environment: set after the run's environment and what earlier steps wrote to `$KNOTLESS_ENV`,
   * so it wins over both; only secrets come later (src/pod/helper-script.ts has the order).
   */
  readonly env?: ReadonlyArray<{ readonly name: string; readonly value: string }>;
  /** The step's own budget; when present it replaces the run's step timeout for this step. */
  readonly timeoutMs?: number;
}

const MAX_NAME_LENGTH = 200;

/**
 * Parses a steps file, given as its bytes (as read from disk: a line that is not UTF-8 is refused) or as text;
 * throws InputError naming `file:line` and what was expected.
 */
export function parseStepsFile(input: string | Uint8Array, fileName: string): StepSpec[] {
  const text = typeof input === "string" ? input : decodeStepsBytes(input, fileName);
  const steps: StepSpec[] = [];
  const declaredAt = new Map<string, number>();
  const lines = text.split(/\r?\n/);
  lines.forEach((line, index) => {
    const location = `${fileName}:${index + 1}`;
    if (line.trim() === "" || line.trimStart().startsWith("#")) return;
    const tab = line.indexOf("\t");
    if (tab < 0) throw new InputError("expected `name<TAB>script`, found no tab character", location);
    const name = line.slice(0, tab).trim();
    const script = line.slice(tab + 1).trim();
    if (name === "") throw new InputError("expected a step name before the tab, found an empty name", location);
    if (name.length > MAX_NAME_LENGTH)
      throw new InputError(`expected a step name of at most ${MAX_NAME_LENGTH} characters`, location);
    if (/[\x00-\x1f\x7f]/.test(name)) throw new InputError("expected a step name without control characters", location);
    if (script === "")
      throw new InputError(`expected a script after the tab for step "${name}", found nothing`, location);
    const earlier = declaredAt.get(name);
    if (earlier !== undefined) throw new InputError(`step name "${name}" is already used at line ${earlier}`, location);
    declaredAt.set(name, index + 1);
    steps.push({ name, script, source: location });
  });
  if (steps.length === 0) throw new InputError("expected at least one step, found none", fileName);
  return steps;
}

/**
 * The file's text, after checking that every line that is not a comment is UTF-8: decoding would otherwise turn a
 * name in another encoding into U+FFFD and run it under a name nobody wrote. Lines are split at \n, as parsing does.
 */
function decodeStepsBytes(bytes: Uint8Array, fileName: string): string {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (isUtf8(buffer)) return buffer.toString("utf8");
  for (let start = 0, line = 1; start <= buffer.length; line += 1) {
    const newline = buffer.indexOf(0x0a, start);
    const end = newline < 0 ? buffer.length : newline;
    const bytesOfLine = buffer.subarray(start, end);
    if (!isUtf8(bytesOfLine) && !isCommentLine(bytesOfLine)) {
      const tab = bytesOfLine.indexOf(0x09);
      const name = tab < 0 ? bytesOfLine : bytesOfLine.subarray(0, tab);
      if (!isUtf8(name)) throw new InputError("expected a step name in UTF-8", `${fileName}:${line}`);
      throw new InputError(
        `expected the script of step "${name.toString("utf8").trim()}" in UTF-8`,
        `${fileName}:${line}`,
      );
    }
    start = end + 1;
  }
  return buffer.toString("utf8");
}

/** Whether a line's first byte after blanks is `#` (a comment is ignored whatever its bytes). */
function isCommentLine(line: Buffer): boolean {
  const first = line.findIndex((byte) => byte !== 0x20 && byte !== 0x09 && byte !== 0x0d);
  return first >= 0 && line[first] === 0x23;
}
