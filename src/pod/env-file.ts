// Writes variables as lines a POSIX shell sources (`export NAME='value'`), keeping every byte of each value.

/** `value` single-quoted for a POSIX shell: nothing inside is special, and a `'` becomes `'\''`. */
export function quoteShellWord(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * One `export NAME='value'` line per variable, in order (sourced, a later line of the same name wins). The names must
 * be valid and the values free of NUL (src/workflow/step-environment.ts checks both); newlines, quotes, `$`, backticks,
 * backslashes and any UTF-8 arrive as they are.
 */
export function buildEnvFile(variables: ReadonlyArray<{ readonly name: string; readonly value: string }>): string {
  return variables.map(({ name, value }) => `export ${name}=${quoteShellWord(value)}\n`).join("");
}
