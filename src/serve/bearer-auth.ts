// The service's one credential: a bearer token read from a file only its owner can read, compared in constant time.
import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { InputError } from "../errors.js";

/**
 * Reads the token from `path`: refused (InputError) when the file is readable or writable by group or others, when
 * it cannot be read, or when it holds no token (surrounding whitespace is not part of it).
 */
export function readTokenFile(path: string): string {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch (error) {
    throw new InputError(`--token-file: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  if ((mode & 0o077) !== 0) throw new InputError(`--token-file: ${path} is open to group or others (mode ${(mode & 0o777).toString(8).padStart(4, "0")}); make it readable by its owner only (chmod 600)`);
  const token = readFileSync(path, "utf8").trim();
  if (token === "") throw new InputError(`--token-file: ${path} is empty`);
  if (/\s/.test(token)) throw new InputError(`--token-file: ${path} holds more than one word; a token has no whitespace`);
  return token;
}

/**
 * A checker of `Authorization` headers against `token`. The comparison is of SHA-256 digests with timingSafeEqual, so
 * neither the token's bytes nor its length show in the time an answer takes.
 */
export function createBearerCheck(token: string): (authorization: string | undefined) => boolean {
  const expected = createHash("sha256").update(token).digest();
  return (authorization) => {
    const match = /^Bearer ([^\s]+)$/i.exec(authorization ?? "");
    if (!match) return false;
    return timingSafeEqual(createHash("sha256").update(match[1]!).digest(), expected);
  };
}
