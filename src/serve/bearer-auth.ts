// The service's one credential: a bearer token read from a file only its owner can read (and read again when it changes), compared in constant time.
import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { describeError, InputError } from "../core/errors.js";

/** The shortest token taken: 16 characters (of a random token, 96 bits and more) keep guessing out of reach. */
export const MIN_TOKEN_LENGTH = 16;

/**
 * Reads the token from `path`: refused (InputError) when the file is readable or writable by group or others, when
 * it cannot be read, when it holds no token (surrounding whitespace is not part of it), or one shorter than
 * MIN_TOKEN_LENGTH.
 */
export function readTokenFile(path: string): string {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch (error) {
    throw new InputError(
      `--token-file: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    );
  }
  if ((mode & 0o077) !== 0)
    throw new InputError(
      `--token-file: ${path} is open to group or others (mode ${(mode & 0o777).toString(8).padStart(4, "0")}); make it readable by its owner only (chmod 600)`,
    );
  const token = readFileSync(path, "utf8").trim();
  if (token === "") throw new InputError(`--token-file: ${path} is empty`);
  if (/\s/.test(token))
    throw new InputError(`--token-file: ${path} holds more than one word; a token has no whitespace`);
  if (token.length < MIN_TOKEN_LENGTH)
    throw new InputError(
      `--token-file: ${path} holds a token of ${token.length} characters; a token needs at least ${MIN_TOKEN_LENGTH} (make one with: openssl rand -hex 32)`,
    );
  return token;
}

/**
 * The token of `path` as it is now: the file's identity (inode, size, mtime) is looked at on each call (one stat)
 * and the file read again when it changed, so a rotated token is taken without a restart. A changed file that is
 * refused (unreadable, open to others, too short, gone) keeps the last good token, and `warn` says why, once per change.
 */
export function watchTokenFile(path: string, initial: string, warn: (message: string) => void): () => string {
  let token = initial;
  let seen = identify(path);
  return () => {
    const now = identify(path);
    if (now === seen) return token;
    seen = now;
    try {
      token = readTokenFile(path);
      warn(`--token-file: ${path} changed: its new token is in use`);
    } catch (error) {
      warn(`${describeError(error)}; keeping the previous token`);
    }
    return token;
  };
}

/** A file's identity for change detection; a file that cannot be stat'ed has its error code as one. */
function identify(path: string): string {
  try {
    const stats = statSync(path, { bigint: true });
    return `${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.mode}`;
  } catch (error) {
    return `error:${(error as NodeJS.ErrnoException).code ?? "?"}`;
  }
}

/**
 * A checker of `Authorization` headers against `token` (or the token a watchTokenFile gives at each check). The
 * comparison is of SHA-256 digests with timingSafeEqual, so neither the token's bytes nor its length show in the
 * time an answer takes.
 */
export function createBearerCheck(token: string | (() => string)): (authorization: string | undefined) => boolean {
  const current = typeof token === "string" ? () => token : token;
  let digested = { token: "", digest: Buffer.alloc(0) };
  return (authorization) => {
    const now = current();
    if (digested.token !== now || digested.digest.length === 0)
      digested = { token: now, digest: createHash("sha256").update(now).digest() };
    const match = /^Bearer ([^\s]+)$/i.exec(authorization ?? "");
    if (!match) return false;
    return timingSafeEqual(createHash("sha256").update(match[1]!).digest(), digested.digest);
  };
}
