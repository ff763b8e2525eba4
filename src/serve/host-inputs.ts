// What of the service's host a submission may name: a directory inside --checkout-root (symlinks resolved), and git URLs over https (http with --allow-http-git).
import { realpathSync, statSync } from "node:fs";
import { isAbsolute, relative, sep } from "node:path";
import { InputError } from "../core/errors.js";

/**
 * The real path of `path` when it is a directory inside `root` (both resolved through their symlinks); throws
 * InputError otherwise. Missing, not a directory, outside the root and unreadable get the same words, so that no
 * answer tells a client what exists on the host.
 */
export function resolveDirInsideRoot(path: string, field: string, root: string | undefined): string {
  if (root === undefined)
    throw new InputError(
      `${field} is not taken here: this service was started without --checkout-root, so it reads no directory of its host (give checkout.git, or ask its operator for a checkout root)`,
    );
  const refused = new InputError(
    `${field}: ${JSON.stringify(path)} is not a directory inside this service's checkout root`,
  );
  if (!isAbsolute(path)) throw refused;
  let real: string;
  try {
    real = realpathSync(path);
    const within = relative(realpathSync(root), real);
    if (within.startsWith(`..${sep}`) || within === ".." || isAbsolute(within) || !statSync(real).isDirectory())
      throw refused;
  } catch {
    throw refused;
  }
  return real;
}

/**
 * Refuses a git URL the service will not fetch (InputError): only https://, and http:// when `allowHttp`. A
 * `file://` URL or a path would clone the service's own host; ssh:// would use its keys; git:// is unauthenticated.
 */
export function checkServedGitUrl(url: string, allowHttp: boolean): void {
  const schemes = allowHttp ? "https:// or http://" : "https://";
  let protocol: string | undefined;
  try {
    protocol = new URL(url).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol === "https:" || (allowHttp && protocol === "http:")) return;
  const why =
    protocol === "http:"
      ? "http:// is taken only when the service runs with --allow-http-git"
      : protocol === undefined
        ? "this is not a URL"
        : `${protocol}// is not taken`;
  throw new InputError(`checkout.git.url takes ${schemes} URLs only (${why}), got ${JSON.stringify(url)}`);
}
