import assert from "node:assert/strict";
import { chmodSync, chownSync, closeSync, mkdirSync, openSync, statSync, writeFileSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, it } from "node:test";
import { EXIT } from "../../src/cli/exit-codes.js";
import { runCli } from "../support/run-cli.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const TOKEN = "serve-state-token-0123456789";
/** Root ignores file modes: the read-only cases run the CLI as nobody over files nobody owns. */
const NOBODY = { uid: 65534, gid: 65534 };
const asRoot = process.getuid?.() === 0;

/** A state directory and a token file, owned by `user` when given. */
function makeState(user?: { uid: number; gid: number }): { dir: string; stateDir: string; db: string; args: string[] } {
  const dir = makeTestTempDir("serve-state-");
  chmodSync(dir, 0o755);
  const stateDir = join(dir, "state");
  mkdirSync(stateDir, { mode: 0o700 });
  const tokenFile = join(dir, "token");
  writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
  if (user) for (const path of [stateDir, tokenFile]) chownSync(path, user.uid, user.gid);
  const args = [
    "serve",
    "--listen",
    "127.0.0.1:0",
    "--state-dir",
    stateDir,
    "--token-file",
    tokenFile,
    "--transport",
    "kubectl",
    "--kubectl",
    "/nonexistent/kubectl",
    "--skip-warm",
  ];
  return { dir, stateDir, db: join(stateDir, "runner.sqlite"), args };
}

/** A real runner.sqlite with a few pages of filler. */
function writeDatabase(path: string): void {
  const open = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => {
    exec(sql: string): void;
    close(): void;
  };
  const db = new open(path);
  db.exec(
    "CREATE TABLE filler (x TEXT); " +
      Array.from({ length: 50 }, (_, i) => `INSERT INTO filler VALUES ('${String(i).repeat(200)}');`).join(" "),
  );
  db.close();
}

// Bounds that only end a start-up that hangs: a busy machine has taken over 30 s to start serve.
const startUntilListening = (args: string[], user?: { uid: number; gid: number }) =>
  runCli(args, {
    timeoutMs: 120_000,
    signalWhen: { when: /listening on/, signal: "SIGTERM" },
    ...(user ? { user } : {}),
  });

describe("serve's start-up on a state it cannot use", { timeout: 900_000 }, () => {
  it("refuses a runner.sqlite that is not a database, with its own exit code and a message naming the file and what to do", async () => {
    const { db, args } = makeState();
    writeFileSync(db, "this is not a database, just some text that fills more than a hundred bytes ".repeat(60));
    const run = await startUntilListening(args);
    assert.equal(run.code, EXIT.stateUnavailable, run.stderr);
    assert.match(run.stderr, new RegExp(`${db.replace(/[.]/g, "\\.")}: .*not a SQLite database`));
    assert.match(run.stderr, /restore it from a backup, or move it and runs\/ aside/);
  });

  it("refuses a malformed runner.sqlite (a valid header, damaged pages), naming the file", async () => {
    const { db, args } = makeState();
    writeDatabase(db);
    const fd = openSync(db, "r+");
    writeSync(fd, Buffer.alloc(4096, 0xa5), 0, 4096, 4096);
    closeSync(fd);
    const run = await startUntilListening(args);
    assert.equal(run.code, EXIT.stateUnavailable, run.stderr);
    assert.match(run.stderr, new RegExp(`${db.replace(/[.]/g, "\\.")}: .*damaged`));
  });

  it("refuses a 0-byte runner.sqlite beside runs/ that holds runs, as a lost database, naming both", async () => {
    const { stateDir, db, args } = makeState();
    writeFileSync(db, "");
    mkdirSync(join(stateDir, "runs", "r1"), { recursive: true });
    const run = await startUntilListening(args);
    assert.equal(run.code, EXIT.stateUnavailable, run.stderr);
    assert.match(
      run.stderr,
      new RegExp(
        `${db.replace(/[.]/g, "\\.")} is empty but ${join(stateDir, "runs").replace(/[.]/g, "\\.")} holds 1 run`,
      ),
    );
    assert.equal(statSync(db).size, 0, "the empty file is left as it was");
  });

  it("starts on a 0-byte runner.sqlite with no runs/ as on a new state", async () => {
    const { db, args } = makeState();
    writeFileSync(db, "");
    const run = await startUntilListening(args);
    assert.equal(run.code, EXIT.success, run.stderr);
    assert.ok(statSync(db).size > 0);
  });

  it(
    "refuses a read-only runner.sqlite, naming the file",
    { skip: asRoot ? false : "the read-only case runs the CLI as nobody, which needs root" },
    async () => {
      const { db, args } = makeState(NOBODY);
      writeDatabase(db);
      chownSync(db, NOBODY.uid, NOBODY.gid);
      chmodSync(db, 0o400);
      const run = await startUntilListening(args, NOBODY);
      assert.equal(run.code, EXIT.stateUnavailable, run.stderr);
      assert.match(run.stderr, new RegExp(`${db.replace(/[.]/g, "\\.")}: .*read-only`));
    },
  );

  it(
    "refuses a state directory it cannot write, naming it",
    { skip: asRoot ? false : "the unwritable case runs the CLI as nobody, which needs root" },
    async () => {
      const { stateDir, args } = makeState(NOBODY);
      chmodSync(stateDir, 0o500);
      const run = await startUntilListening(args, NOBODY);
      assert.equal(run.code, EXIT.stateUnavailable, run.stderr);
      assert.match(run.stderr, new RegExp(`${stateDir.replace(/[.]/g, "\\.")}.*cannot be written`));
    },
  );
});
