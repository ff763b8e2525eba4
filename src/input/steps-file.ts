// Parses the steps file: one step per line, `name<TAB>script`; blank lines and `#` comments are ignored.
import { InputError } from "../errors.js";

/** One step of a workflow run: its name, the shell script it runs, and where it was declared. */
export interface StepSpec {
  readonly name: string;
  readonly script: string;
  /** `file:line` of its declaration, for messages. */
  readonly source: string;
}

const MAX_NAME_LENGTH = 200;

/** Parses the text of a steps file; throws InputError naming `file:line` and what was expected. */
export function parseStepsFile(text: string, fileName: string): StepSpec[] {
  const steps: StepSpec[] = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((line, index) => {
    const location = `${fileName}:${index + 1}`;
    if (line.trim() === "" || line.trimStart().startsWith("#")) return;
    const tab = line.indexOf("\t");
    if (tab < 0) throw new InputError("expected `name<TAB>script`, found no tab character", location);
    const name = line.slice(0, tab).trim();
    const script = line.slice(tab + 1).trim();
    if (name === "") throw new InputError("expected a step name before the tab, found an empty name", location);
    if (name.length > MAX_NAME_LENGTH) throw new InputError(`expected a step name of at most ${MAX_NAME_LENGTH} characters`, location);
    if (/[\x00-\x1f\x7f]/.test(name)) throw new InputError("expected a step name without control characters", location);
    if (script === "") throw new InputError(`expected a script after the tab for step "${name}", found nothing`, location);
    steps.push({ name, script, source: location });
  });
  if (steps.length === 0) throw new InputError("expected at least one step, found none", fileName);
  return steps;
}
