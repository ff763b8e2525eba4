// The typed secret every part of the runner takes once the input side has read and checked it.

/** A named secret value: non-empty, its name a valid environment variable name. */
export interface Secret {
  readonly name: string;
  readonly value: string;
}

/** What a secret's name must match (the names steps see as environment variables). */
export const SECRET_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
