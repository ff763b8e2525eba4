// One environment variable (a workflow's, a step's or a secret's) and the names a POSIX shell can export.

/** One environment variable (or secret), in the order it was given, as a step will see it. */
export interface EnvVar {
  readonly name: string;
  readonly value: string;
}

/** An environment variable name, as Tangled and POSIX shells accept it. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
