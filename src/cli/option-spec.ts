// One command-line option, declared once: commander builds help and errors from it, the fast path reads it too.
import type { Command } from "commander";

export interface OptionSpec {
  /** As commander takes it: `--name <value>` for a string, `--name` for a flag. */
  readonly flag: string;
  readonly description: string;
  readonly required?: boolean;
  readonly defaultValue?: string;
  /** May be given more than once; the values arrive as a list in order. */
  readonly repeatable?: boolean;
}

/** `--max-output-bytes <size>` → `max-output-bytes`. */
export function readOptionName(spec: OptionSpec): string {
  return spec.flag.slice(2).split(" ")[0]!;
}

/** `max-output-bytes` → `maxOutputBytes`, the key commander gives the parsed value. */
export function toCamelCase(name: string): string {
  return name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
}

/** Whether the option takes a value (`--name <value>`) rather than being a flag. */
export function takesValue(spec: OptionSpec): boolean {
  return spec.flag.includes(" <");
}

/** Declares the options on a commander command, in order. */
export function addOptions(command: Command, specs: readonly OptionSpec[]): void {
  for (const spec of specs) {
    if (spec.repeatable)
      command.option(spec.flag, spec.description, (value: string, previous: string[] | undefined) => [
        ...(previous ?? []),
        value,
      ]);
    else if (spec.required) command.requiredOption(spec.flag, spec.description);
    else if (spec.defaultValue !== undefined) command.option(spec.flag, spec.description, spec.defaultValue);
    else command.option(spec.flag, spec.description);
  }
}
