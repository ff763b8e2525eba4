// Tests the log file behind run.log and log.ndjson: ordered background writes, and a synchronous finish for a crash.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { constants as fsConstants, openSync, readFileSync, writeFileSync } from "node:fs";
import { Socket } from "node:net";
import { join } from "node:path";
import { describe, it } from "node:test";
import { LogFile } from "../../src/events/log-file.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const dir = makeTestTempDir("knotless-log-file-");
let files = 0;

function makePath(name: string): string {
  files += 1;
  return join(dir, `${files}-${name}`);
}

const numberedLines = (count: number, width = 100): string[] =>
  Array.from({ length: count }, (_, index) => `line ${index} ${"x".repeat(width)}\n`);

describe("LogFile", () => {
  it("tells its listener the file's length each time a chunk is in the file, never more than the file holds", async () => {
    const path = makePath("written.ndjson");
    const seen: Array<{ length: number; size: number }> = [];
    const file = new LogFile(path, { onWritten: (length) => seen.push({ length, size: readFileSync(path).length }) });
    file.write("one\n");
    file.write("two\n");
    file.write("three\n");
    await file.close();
    assert.equal(seen.at(-1)!.length, 14);
    for (const { length, size } of seen) assert.ok(size >= length, `told ${length} bytes while the file held ${size}`);
  });

  it("has every line on disk, in the order written, when close resolves", async () => {
    const path = makePath("ordered.log");
    const log = new LogFile(path);
    const lines = numberedLines(5000);
    for (const line of lines) log.write(line);
    await log.close();
    assert.equal(readFileSync(path, "utf8"), lines.join(""));
  });

  it("resolves every close once the lines are on disk, however often it is called", { timeout: 10_000 }, async () => {
    const path = makePath("twice.log");
    const log = new LogFile(path);
    const lines = numberedLines(500);
    for (const line of lines) log.write(line);
    await Promise.all([log.close(), log.close()]);
    await log.close();
    assert.equal(readFileSync(path, "utf8"), lines.join(""));
  });

  it("replaces what the file held before", async () => {
    const path = makePath("old.log");
    writeFileSync(path, "an older run's log, longer than the new one\n");
    const log = new LogFile(path);
    log.write("new\n");
    await log.close();
    assert.equal(readFileSync(path, "utf8"), "new\n");
  });

  it("writes everything written so far on flushSync, while a background write is still in flight", async () => {
    const path = makePath("flush.log");
    const log = new LogFile(path);
    const lines = numberedLines(2000);
    log.write(lines[0]!); // starts a background write of the first line
    for (const line of lines.slice(1)) log.write(line); // queued behind it
    log.flushSync();
    assert.equal(readFileSync(path, "utf8"), lines.join(""), "on disk when flushSync returns");
    await log.close(); // the background write lands at its own place again: nothing moves or repeats
    assert.equal(readFileSync(path, "utf8"), lines.join(""));
  });

  it("leaves the whole log on disk in a process that exits right after closeSync", () => {
    const path = makePath("crash.log");
    const moduleUrl = new URL("../../src/events/log-file.js", import.meta.url).href;
    const script = [
      `const { LogFile } = await import(${JSON.stringify(moduleUrl)});`,
      `const log = new LogFile(${JSON.stringify(path)});`,
      `for (let i = 0; i < 3000; i += 1) log.write("line " + i + "\\n");`,
      "log.flushSync();",
      "log.closeSync();",
      "process.exit(3);",
    ].join("\n");
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
    assert.equal(child.status, 3, child.stderr);
    assert.equal(readFileSync(path, "utf8"), Array.from({ length: 3000 }, (_, i) => `line ${i}\n`).join(""));
  });

  it("does not throw when the file cannot be created, drops writes, and close rejects naming the file", async () => {
    const path = join(dir, "missing", "run.log");
    const log = new LogFile(path);
    assert.doesNotThrow(() => log.write("dropped\n"));
    assert.doesNotThrow(() => log.flushSync());
    await assert.rejects(log.close(), (error: Error & { code?: string; path?: string }) => {
      assert.equal(error.code, "ENOENT");
      assert.equal(error.path, path);
      assert.match(error.message, /^cannot write .*missing\/run\.log: ENOENT/);
      return true;
    });
  });

  it("writes to a FIFO at its end, in order, for a reader on the other side", async () => {
    const path = makePath("run.fifo");
    const made = spawnSync("mkfifo", [path]);
    assert.equal(made.status, 0, String(made.stderr));
    // The reader's end, opened first (non-blocking, so this does not wait for a writer).
    const reader = new Socket({
      fd: openSync(path, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK),
      readable: true,
      writable: false,
    });
    const chunks: Buffer[] = [];
    reader.on("data", (chunk: Buffer) => chunks.push(chunk));
    const readerDone = new Promise((resolve) => reader.once("end", resolve));
    const log = new LogFile(path);
    const lines = numberedLines(3000, 40);
    for (const line of lines) log.write(line);
    await log.close();
    await readerDone;
    reader.destroy();
    assert.equal(Buffer.concat(chunks).toString("utf8"), lines.join(""));
  });

  it("does not hang on a FIFO nobody reads: close rejects with ENXIO", async () => {
    const path = makePath("unread.fifo");
    assert.equal(spawnSync("mkfifo", [path]).status, 0);
    const log = new LogFile(path);
    log.write("nobody reads this\n");
    await assert.rejects(log.close(), { code: "ENXIO" });
  });
});

describe("LogFile resumed at a checkpoint's length", () => {
  it("cuts the file to that length and writes on from there, telling lengths from there", async () => {
    const path = makePath("resumed.ndjson");
    writeFileSync(path, "kept 1\nkept 2\nwritten after the checkpoint\n");
    const seen: number[] = [];
    const file = new LogFile(path, { resumeAt: 14, onWritten: (length) => seen.push(length) });
    assert.equal(file.queuedLength, 14);
    file.write("again\n");
    assert.equal(file.queuedLength, 20);
    assert.equal(await file.whenWritten(20), true);
    await file.close();
    assert.equal(readFileSync(path, "utf8"), "kept 1\nkept 2\nagain\n");
    assert.deepEqual(seen, [20]);
  });

  it("fails, writing nothing, when the file is shorter than the checkpoint counted", async () => {
    const path = makePath("short.ndjson");
    writeFileSync(path, "short\n");
    const file = new LogFile(path, { resumeAt: 100 });
    file.write("more\n");
    assert.equal(await file.whenWritten(105), false);
    await assert.rejects(file.close(), /fewer than the 100 its checkpoint counted/);
    assert.equal(readFileSync(path, "utf8"), "short\n");
  });
});
