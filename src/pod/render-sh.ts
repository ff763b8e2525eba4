// The one renderer of the in-pod shell programs: their settings as variable assignments, then the .sh files' text as it is.
import { quoteShellWord } from "./env-file.js";

/** Settings of a program, by variable name (upper case: the .sh files read them as their environment). */
export type ShellSettings = Readonly<Record<string, string | number>>;

/**
 * `NAME=value` lines (each value quoted unless it is a plain word), then each program's text without its opening
 * contract comment (for the source's reader; it would only lengthen argv and manifests). No value is ever spliced into
 * a program: it reads its settings as variables, so the .sh file shellcheck reads is the code that runs.
 */
export function renderShellProgram(settings: ShellSettings, ...programs: readonly string[]): string {
  const lines = Object.entries(settings).map(([name, value]) => {
    if (!/^[A-Z][A-Z0-9_]*$/.test(name))
      throw new RangeError(
        `a shell setting's name must be upper-case letters, digits and _, got ${JSON.stringify(name)}`,
      );
    const text = String(value);
    return `${name}=${/^[A-Za-z0-9_./:%+,@-]+$/.test(text) ? text : quoteShellWord(text)}`;
  });
  return [...lines, ...programs.map(stripContract)].join("\n");
}

function stripContract(program: string): string {
  return program.replace(/^(?:#[^\n]*\n|\n)*/, "").replace(/\n$/, "");
}
