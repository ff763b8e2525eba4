// Checks the variables, secrets and shell a run hands its steps, before the Job exists: what a pod's process can carry.
import { ENV_NAME, type EnvVar } from "../core/env-var.js";
import { InputError } from "../core/errors.js";
import { describeStep } from "./step-label.js";

/** What the steps' environment is made of (a subset of RunSettings). */
export interface StepEnvironmentInput {
  readonly env: readonly EnvVar[];
  readonly secrets?: readonly EnvVar[];
  readonly shell?: string;
  readonly steps: ReadonlyArray<{ readonly name: string; readonly env?: readonly EnvVar[] }>;
}

/** The step's wrapper sets these itself, last, for every step; nothing else may. */
export const RUNNER_SET_VARIABLES: readonly string[] = ["KNOTLESS_ENV", "KNOTLESS_STEP_MARK"];

/** Linux refuses to start a process whose environment holds a `NAME=value` string longer than this (MAX_ARG_STRLEN), NUL included. */
export const MAX_ENV_STRING_BYTES = 131_072;

/** The step's shell when none is configured. */
export const DEFAULT_STEP_SHELL: readonly string[] = ["sh", "-e"];

/** A lone UTF-16 surrogate cannot be written as UTF-8: it would arrive as U+FFFD instead of itself. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** Throws InputError naming `what` (e.g. `step "build" env`) and the variable, unless it can reach a step byte for byte. */
function checkVariable(variable: EnvVar, what: string): void {
  const { name, value } = variable;
  if (!ENV_NAME.test(name)) {
    throw new InputError(
      `${what}: expected a variable name of letters, digits and _ that does not start with a digit, found ${JSON.stringify(name)}`,
    );
  }
  if (RUNNER_SET_VARIABLES.includes(name))
    throw new InputError(`${what}: ${name} is set by the runner for every step and cannot be configured`);
  if (value.includes("\0"))
    throw new InputError(
      `${what}: the value of ${name} holds a NUL character, which no environment variable can carry`,
    );
  if (LONE_SURROGATE.test(value))
    throw new InputError(`${what}: the value of ${name} is not valid Unicode text (a lone surrogate)`);
  const bytes = Buffer.byteLength(name) + 1 + Buffer.byteLength(value) + 1;
  if (bytes > MAX_ENV_STRING_BYTES) {
    throw new InputError(
      `${what}: ${name} would be ${bytes} bytes in the step's environment; Linux starts no process with a variable over ${MAX_ENV_STRING_BYTES} bytes`,
    );
  }
}

/**
 * Splits the shell setting into its words (`bash -eo pipefail` → bash, -eo, pipefail); plain words only, no quoting.
 * Absent: `sh -e`.
 */
export function readStepShell(shell: string | undefined): readonly string[] {
  if (shell === undefined) return DEFAULT_STEP_SHELL;
  const words = shell
    .trim()
    .split(/[ \t]+/)
    .filter(Boolean);
  if (words.length === 0) throw new InputError("shell: expected a command such as `bash -eo pipefail`, found nothing");
  if (/[\x00-\x08\x0a-\x1f\x7f]/.test(shell))
    throw new InputError(`shell: expected plain words without control characters, found ${JSON.stringify(shell)}`);
  if (LONE_SURROGATE.test(shell)) throw new InputError("shell: expected valid Unicode text");
  return words;
}

/**
 * Throws InputError for anything the steps' environment cannot carry: a name a shell cannot export, a name the
 * runner sets, a NUL, text that is not valid Unicode, a variable over Linux's size limit, or a bad shell.
 */
export function checkStepEnvironment(input: StepEnvironmentInput): void {
  for (const variable of input.env) checkVariable(variable, "environment");
  for (const [index, step] of input.steps.entries()) {
    for (const variable of step.env ?? []) checkVariable(variable, `${describeStep(index, step.name)} env`);
  }
  // A secret's value is never part of a message: only its name.
  for (const secret of input.secrets ?? []) checkVariable(secret, "secrets");
  readStepShell(input.shell);
}

/**
 * The variables configured under a secret's name: the secret wins in every step (secrets are set after the step's
 * own env), so each is worth a warning. Names only, never values.
 */
export function findSecretShadowing(
  input: StepEnvironmentInput,
): Array<{ readonly name: string; readonly where: string }> {
  const secretNames = new Set((input.secrets ?? []).map((secret) => secret.name));
  const found: Array<{ name: string; where: string }> = [];
  const seen = new Set<string>();
  const note = (name: string, where: string): void => {
    const key = `${name}\0${where}`;
    if (!secretNames.has(name) || seen.has(key)) return;
    seen.add(key);
    found.push({ name, where });
  };
  for (const variable of input.env) note(variable.name, "the run's environment");
  for (const [index, step] of input.steps.entries())
    for (const variable of step.env ?? []) note(variable.name, `${describeStep(index, step.name)} env`);
  return found;
}
