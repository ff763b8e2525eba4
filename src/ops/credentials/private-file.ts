// Writes a file only its owner can read (mode 0600), atomically, and refuses a target that exists with looser permissions.
import { randomBytes } from "node:crypto";
import {
  closeSync,
  fchmodSync,
  fsyncSync,
  lstatSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
  constants,
} from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { InputError } from "../../core/errors.js";

const PRIVATE_MODE = 0o600;

/**
 * Checks that `path` may receive a secret: its directory exists, and the file is absent or a regular file (not a
 * link) that group and others cannot read or write. Throws InputError naming the file otherwise, before anything
 * is asked of the cluster.
 */
export function checkPrivateTarget(path: string, flag = "--out"): void {
  const full = resolve(path);
  let directory;
  try {
    directory = statSync(dirname(full));
  } catch {
    throw new InputError(`${flag}: the directory ${dirname(full)} does not exist`);
  }
  if (!directory.isDirectory()) throw new InputError(`${flag}: ${dirname(full)} is not a directory`);
  let existing;
  try {
    existing = lstatSync(full);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw new InputError(`${flag}: cannot inspect ${full}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  if (existing.isSymbolicLink())
    throw new InputError(`${flag}: ${full} is a symbolic link; refusing to write a credential through it`);
  if (!existing.isFile()) throw new InputError(`${flag}: ${full} exists and is not a regular file`);
  const mode = existing.mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new InputError(
      `${flag}: ${full} exists with mode ${mode.toString(8).padStart(4, "0")}, which lets others read or write it; refusing to write a credential into it (chmod 600 it or remove it)`,
    );
  }
}

/**
 * Writes `text` to `path` with mode 0600: into a new file next to it (created 0600, so the secret is never readable
 * by others at any moment), then renamed over `path`. Checks the target again first (checkPrivateTarget).
 */
export function writePrivateFile(path: string, text: string, flag = "--out"): void {
  checkPrivateTarget(path, flag);
  const full = resolve(path);
  const temporary = join(dirname(full), `.${basename(full)}.${randomBytes(6).toString("hex")}.tmp`);
  const fd = openSync(
    temporary,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    PRIVATE_MODE,
  );
  try {
    fchmodSync(fd, PRIVATE_MODE); // exactly 0600, whatever the umask took away
    writeSync(fd, text);
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(temporary, { force: true });
    throw error;
  }
  closeSync(fd);
  try {
    renameSync(temporary, full);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
