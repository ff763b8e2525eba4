// Tells a write that failed for want of space (a full disk or quota) from any other failure, whoever reports it: the file system or SQLite.
import { basename } from "node:path";
import { InfraError } from "./errors.js";

/** The codes of "no room to write": ENOSPC and EDQUOT from the file system, SQLITE_FULL from SQLite. */
const DISK_FULL_CODES = new Set(["ENOSPC", "EDQUOT", "SQLITE_FULL"]);

/** True when `error`, or an error in its `cause` chain, is a write refused for want of space. */
export function isDiskFullError(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 8; current = current.cause, depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && DISK_FULL_CODES.has(code)) return true;
  }
  return false;
}

/**
 * The error a run is stopped with when the runner cannot write its record for want of space: `disk-full`, naming
 * the file by its name only (a service's answers carry no host path) and the code.
 */
export function makeDiskFullError(error: unknown): InfraError {
  const { path, code } = error as { path?: unknown; code?: unknown };
  const file = typeof path === "string" ? ` ${basename(path)}` : " the run's files";
  return new InfraError(
    "disk-full",
    `the runner's disk is full: no space left to write${file} (${typeof code === "string" ? code : "ENOSPC"})`,
    { cause: error },
  );
}
