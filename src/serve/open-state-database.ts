// Opens the service's runner.sqlite for writing, or says in a StateError which file is unusable, what is wrong with it and what to do.
import { accessSync, constants, mkdirSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { StateError } from "../core/errors.js";

const START_AFRESH = "restore it from a backup, or move it and runs/ aside to start with an empty state";

/**
 * Opens `<stateDir>/runner.sqlite` (creating it and the directory), checks that it is a whole database and that it
 * can be written, then runs `prepare` (the schema) inside the same checks. A missing or 0-byte file is a new state,
 * unless runs/ beside it holds runs: then the database that recorded them is lost, and nothing is opened.
 */
export function openStateDatabase(stateDir: string, prepare: (db: Database.Database) => void): Database.Database {
  const file = join(stateDir, "runner.sqlite");
  try {
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    accessSync(stateDir, constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new StateError(
      `${stateDir}: the state directory cannot be written (${codeOf(error)}): runner.sqlite and its journal live there; give the service's user write access to it, or choose another --state-dir`,
    );
  }
  const size = sizeOf(file);
  if (size === undefined || size === 0) {
    const kept = countRuns(join(stateDir, "runs"));
    if (kept > 0) {
      throw new StateError(
        `${file} is ${size === undefined ? "missing" : "empty"} but ${join(stateDir, "runs")} holds ${kept} run${kept === 1 ? "" : "s"}: the database that recorded them is lost; restore runner.sqlite from a backup, or move runs/ aside to start with an empty state`,
      );
    }
  }
  // Required here, not imported: the CLI is one bundle, and a static import would load the native addon for every command.
  const open = createRequire(import.meta.url)("better-sqlite3") as typeof Database;
  let db: Database.Database | undefined;
  try {
    db = new open(file);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    const check = db.pragma("quick_check", { simple: true });
    if (check !== "ok") throw Object.assign(new Error(String(check)), { code: "SQLITE_CORRUPT" });
    prepare(db);
    // A database SQLite could open only for reading fails here, at start, rather than at the first submit.
    db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('openedAt', ?)").run(new Date().toISOString());
    return db;
  } catch (error) {
    db?.close();
    if (error instanceof StateError) throw error;
    throw new StateError(describeOpenFailure(file, error));
  }
}

function describeOpenFailure(file: string, error: unknown): string {
  const code = codeOf(error);
  const detail = error instanceof Error ? error.message : String(error);
  if (code === "SQLITE_NOTADB") return `${file}: not a SQLite database (${detail}): ${START_AFRESH}`;
  if (code.startsWith("SQLITE_CORRUPT")) return `${file}: the database is damaged (${detail}): ${START_AFRESH}`;
  if (code.startsWith("SQLITE_READONLY"))
    return `${file}: the database is read-only (${detail}): give the service's user write access to it and to its -wal and -shm files`;
  if (code === "SQLITE_FULL") return `${file}: the disk is full (${detail}): free space on it, then start again`;
  return `${file}: cannot be opened (${code}: ${detail}): check its owner and mode, or ${START_AFRESH}`;
}

function sizeOf(file: string): number | undefined {
  try {
    return statSync(file).size;
  } catch {
    return undefined;
  }
}

function countRuns(runsDir: string): number {
  try {
    return readdirSync(runsDir).length;
  } catch {
    return 0;
  }
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "string" ? code : "unknown";
}
