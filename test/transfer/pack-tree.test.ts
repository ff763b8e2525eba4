// Tests packTrees by extracting its archives with GNU tar and busybox tar and comparing the trees.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, link, mkdir, readdir, rm, stat, symlink, truncate, unlink, utimes, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import type { Server } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { PackError, packTrees } from "../../src/transfer/pack-tree.js";
import type { PackStats } from "../../src/transfer/pack-tree.js";
import { collectStream, makeTempDir, runWithInput, snapshotTree } from "./tree-helpers.js";
import type { SnapshotEntry } from "./tree-helpers.js";
import { findNobodySkipReason } from "../support/nobody.js";

const LONG_DIR = "a-directory-name-that-is-rather-long-on-purpose/and-another-one-nested-below-it-for-length";
const LONG_FILE = `${LONG_DIR}/and-finally-a-file-whose-full-path-is-well-beyond-one-hundred-bytes.txt`;
const LONG_COMPONENT = `${"x".repeat(120)}.txt`;
const LONG_TARGET = `${LONG_DIR}/../${LONG_DIR}/and-finally-a-file-whose-full-path-is-well-beyond-one-hundred-bytes.txt`;
const FIXED_MTIME = new Date("2024-05-06T07:08:09Z");

interface SourceTree {
  readonly dir: string;
  readonly socketServer: Server;
}

/** Builds the mixed source tree every round-trip test packs. */
async function makeSourceTree(parent: string): Promise<SourceTree> {
  const dir = join(parent, "source");
  await mkdir(join(dir, "nested/deeper/deepest"), { recursive: true });
  await mkdir(join(dir, "empty-dir"));
  await mkdir(join(dir, LONG_DIR), { recursive: true });
  await writeFile(join(dir, "nested/deeper/deepest/leaf.txt"), "leaf\n");
  await writeFile(join(dir, "nested/readme.md"), "# nested\n");
  await writeFile(join(dir, "empty-file"), "");
  await writeFile(join(dir, "run.sh"), "#!/bin/sh\necho hi\n");
  await chmod(join(dir, "run.sh"), 0o755);
  await writeFile(join(dir, "big.bin"), randomBytes(3 * 1024 * 1024 + 17));
  await writeFile(join(dir, LONG_FILE), "long path\n");
  await writeFile(join(dir, LONG_COMPONENT), "long component\n");
  await writeFile(join(dir, "café.txt"), "non-ascii name\n");
  await symlink("nested/readme.md", join(dir, "link-to-readme"));
  await symlink(LONG_TARGET, join(dir, "link-with-long-target"));
  await symlink("does-not-exist", join(dir, "dangling-link"));
  await link(join(dir, "nested/readme.md"), join(dir, "hard-link-to-readme"));
  await runWithInput("mkfifo", [join(dir, "a-fifo")], Buffer.alloc(0));
  const socketServer = createServer();
  await new Promise<void>((resolve) => socketServer.listen(join(dir, "a-socket"), resolve));
  for (const file of ["empty-file", "run.sh", "big.bin", LONG_FILE, "nested/readme.md"]) {
    await utimes(join(dir, file), FIXED_MTIME, FIXED_MTIME);
  }
  return { dir, socketServer };
}

/** Packs the roots and extracts with the given tar command into `dest`; returns the pack stats. */
async function packAndExtract(
  command: readonly string[],
  roots: Parameters<typeof packTrees>[0],
  dest: string,
): Promise<PackStats> {
  await mkdir(dest, { recursive: true });
  const { stream, done } = packTrees(roots);
  const [program, ...args] = command;
  const result = await runWithInput(program ?? "tar", [...args, "-xf", "-", "-C", dest], stream);
  assert.equal(result.code, 0, `${command.join(" ")} failed: ${result.stderr}`);
  return done;
}

/** The source snapshot without what packTrees skips, as tar would recreate it. */
async function expectedSnapshot(dir: string): Promise<Map<string, SnapshotEntry>> {
  const snapshot = await snapshotTree(dir);
  snapshot.delete("a-fifo");
  snapshot.delete("a-socket");
  return snapshot;
}

describe("packTrees", () => {
  let workspace = "";
  let source: SourceTree;

  before(async () => {
    workspace = await makeTempDir("pack");
    source = await makeSourceTree(workspace);
  });

  after(async () => {
    source.socketServer.close();
    await rm(workspace, { recursive: true, force: true });
  });

  for (const [label, command] of [
    ["GNU tar", ["tar"]],
    ["busybox tar", ["busybox", "tar"]],
  ] as const) {
    it(`round-trips a mixed tree through ${label} with modes, mtimes, symlinks and long names intact`, async () => {
      const dest = join(workspace, `extracted-${command.length}`);
      const stats = await packAndExtract(command, [{ hostDir: source.dir, archivePrefix: "work" }], dest);

      assert.deepEqual(await readdir(dest), ["work"]);
      const extracted = await snapshotTree(join(dest, "work"));
      const expected = await expectedSnapshot(source.dir);
      assert.deepEqual(extracted, expected);
      assert.equal(extracted.get("run.sh")?.mode, 0o755);
      assert.equal(extracted.get("big.bin")?.mtimeSeconds, FIXED_MTIME.getTime() / 1000);
      assert.equal(extracted.get("link-with-long-target")?.target, LONG_TARGET);
      assert.equal(extracted.get("hard-link-to-readme")?.kind, "file");
      assert.equal(stats.files, 9);
      assert.equal(stats.symlinks, 3);
      assert.equal(stats.dirs, 6);
    });
  }

  it("reports the fifo and the socket as skipped with their host paths and reasons", async () => {
    const { stream, done } = packTrees([{ hostDir: source.dir, archivePrefix: "work" }]);
    await collectStream(stream);
    const stats = await done;
    assert.deepEqual(stats.skipped, [
      { path: join(source.dir, "a-fifo"), reason: "fifo cannot be archived" },
      { path: join(source.dir, "a-socket"), reason: "socket cannot be archived" },
    ]);
  });

  it("counts file content bytes, including each hard link as its own file", async () => {
    const { stream, done } = packTrees([{ hostDir: source.dir, archivePrefix: "work" }]);
    await collectStream(stream);
    const stats = await done;
    const expected = await expectedSnapshot(source.dir);
    const sizes = await Promise.all(
      [...expected].filter(([, entry]) => entry.kind === "file").map(([path]) => fileSize(join(source.dir, path))),
    );
    assert.equal(
      stats.bytes,
      sizes.reduce((sum, size) => sum + size, 0),
    );
  });

  it("names entries under each root's prefix, depth first in sorted order, with no entry for the roots themselves", async () => {
    const first = join(workspace, "multi-a");
    const second = join(workspace, "multi-b");
    await mkdir(join(first, "sub"), { recursive: true });
    await mkdir(second, { recursive: true });
    await writeFile(join(first, "z.txt"), "z");
    await writeFile(join(first, "sub/b.txt"), "b");
    await writeFile(join(first, "a.txt"), "a");
    await writeFile(join(second, "step.sh"), "echo step");
    const { stream, done } = packTrees([
      { hostDir: first, archivePrefix: "work" },
      { hostDir: second, archivePrefix: "steps/abc/" },
    ]);
    const listing = await runWithInput("tar", ["-tvf", "-"], stream);
    await done;
    assert.equal(listing.code, 0, listing.stderr);
    const lines = listing.stdout.trim().split("\n");
    const names = lines.map((line) => line.split(/\s+/).slice(5).join(" "));
    assert.deepEqual(names, ["work/a.txt", "work/sub/", "work/sub/b.txt", "work/z.txt", "steps/abc/step.sh"]);
    for (const line of lines) assert.match(line, / 0\/0 /, `owner should be 0/0 without names: ${line}`);
  });

  it("extracts multi-root archives under their prefixes with GNU tar and busybox tar", async () => {
    const roots = [
      { hostDir: join(source.dir, "nested"), archivePrefix: "work" },
      { hostDir: join(source.dir, "empty-dir"), archivePrefix: "knotless" },
      { hostDir: join(workspace, "multi-b"), archivePrefix: "steps/abc" },
    ];
    for (const command of [["tar"], ["busybox", "tar"]]) {
      const dest = join(workspace, `multi-out-${command.length}`);
      await packAndExtract(command, roots, dest);
      const snapshot = await snapshotTree(dest);
      assert.deepEqual(
        [...snapshot.keys()],
        [
          "steps",
          "steps/abc",
          "steps/abc/step.sh",
          "work",
          "work/deeper",
          "work/deeper/deepest",
          "work/deeper/deepest/leaf.txt",
          "work/readme.md",
        ],
      );
    }
  });

  it("produces byte-identical archives for an unchanged tree", async () => {
    const pack = async (): Promise<Buffer> => {
      const { stream, done } = packTrees([{ hostDir: join(source.dir, "nested"), archivePrefix: "work" }]);
      const bytes = await collectStream(stream);
      await done;
      return bytes;
    };
    assert.deepEqual(await pack(), await pack());
  });

  it("rejects done and errors the stream, naming the path, when a file vanishes before it is packed", async () => {
    const dir = join(workspace, "vanish");
    await mkdir(dir);
    await writeFile(join(dir, "a-large.bin"), randomBytes(8 * 1024 * 1024));
    await writeFile(join(dir, "b-vanishing.txt"), "soon gone");
    const { stream, done } = packTrees([{ hostDir: dir, archivePrefix: "work" }]);
    const chunks = stream[Symbol.asyncIterator]();
    await chunks.next();
    await unlink(join(dir, "b-vanishing.txt"));
    await assert.rejects(drain(chunks), (error: Error) => error.message.includes(join(dir, "b-vanishing.txt")));
    await assert.rejects(
      done,
      (error: unknown) => error instanceof PackError && error.path === join(dir, "b-vanishing.txt"),
    );
    assert.equal(stream.destroyed, true);
  });

  it("rejects done naming the file when a file shrinks while it is being read", async () => {
    const dir = join(workspace, "shrink");
    await mkdir(dir);
    await writeFile(join(dir, "shrinking.bin"), randomBytes(8 * 1024 * 1024));
    const { stream, done } = packTrees([{ hostDir: dir, archivePrefix: "work" }]);
    const chunks = stream[Symbol.asyncIterator]();
    await chunks.next();
    await truncate(join(dir, "shrinking.bin"), 1000);
    await assert.rejects(drain(chunks), /shrinking\.bin: it shrank while being read/);
    await assert.rejects(
      done,
      (error: unknown) => error instanceof PackError && error.path === join(dir, "shrinking.bin"),
    );
  });

  it(
    "rejects done and errors the stream, naming the path, when a file is unreadable",
    { skip: findNobodySkipReason() },
    async () => {
      const dir = join(workspace, "unreadable");
      await mkdir(dir);
      await writeFile(join(dir, "readable.txt"), "fine");
      await writeFile(join(dir, "secret.txt"), "no access");
      await chmod(join(dir, "secret.txt"), 0o000);
      const outcome = await packAsUnprivilegedUser(dir);
      assert.equal(outcome.doneError?.name, "PackError");
      assert.equal(outcome.doneError?.path, join(dir, "secret.txt"));
      assert.match(outcome.doneError?.message ?? "", /EACCES/);
      assert.match(outcome.streamError ?? "", /secret\.txt/);
    },
  );

  it("rejects done naming the root when a root directory does not exist", async () => {
    const missing = join(workspace, "no-such-dir");
    const { stream, done } = packTrees([{ hostDir: missing, archivePrefix: "work" }]);
    await assert.rejects(collectStream(stream), (error: Error) => error.message.includes(missing));
    await assert.rejects(done, (error: unknown) => error instanceof PackError && error.path === missing);
  });

  it("rejects done when the consumer destroys the stream before the archive is complete", async () => {
    const { stream, done } = packTrees([{ hostDir: source.dir, archivePrefix: "work" }]);
    const chunks = stream[Symbol.asyncIterator]();
    await chunks.next();
    stream.destroy();
    await assert.rejects(done, PackError);
  });

  it("lets timers and I/O callbacks run while it packs many small files", async () => {
    const dir = join(workspace, "many-small");
    for (let sub = 0; sub < 10; sub += 1) {
      await mkdir(join(dir, `d${sub}`), { recursive: true });
      for (let index = 0; index < 300; index += 1)
        await writeFile(join(dir, `d${sub}`, `f${index}.txt`), `${sub}/${index}\n`.repeat(200));
    }
    let turns = 0;
    let packing = true;
    const count = (): void => {
      turns += 1;
      if (packing) setImmediate(count);
    };
    setImmediate(count);
    const { stream, done } = packTrees([{ hostDir: dir, archivePrefix: "work" }]);
    const archive = await collectStream(stream);
    const stats = await done;
    packing = false;
    assert.equal(stats.files, 3000);
    assert.ok(archive.length > 3000 * 512);
    assert.ok(turns > 1, `the event loop turned ${turns} times during packing`);
  });

  it("throws for an archive prefix that is empty or climbs with ..", () => {
    assert.throws(() => packTrees([{ hostDir: source.dir, archivePrefix: "" }]), TypeError);
    assert.throws(() => packTrees([{ hostDir: source.dir, archivePrefix: "work/../etc" }]), TypeError);
    assert.throws(() => packTrees([{ hostDir: source.dir, archivePrefix: "./work" }]), TypeError);
    assert.throws(() => packTrees([{ hostDir: source.dir, archivePrefix: "/work" }]), TypeError);
  });
});

async function fileSize(path: string): Promise<number> {
  return (await stat(path)).size;
}

async function drain(chunks: AsyncIterator<unknown>): Promise<void> {
  for (;;) {
    const step = await chunks.next();
    if (step.done === true) return;
  }
}

interface ChildOutcome {
  readonly doneError?: { name: string; path: string; message: string };
  readonly streamError?: string;
}

/** Packs `dir` in a child process that runs as nobody when we are root (root can read mode-000 files). */
async function packAsUnprivilegedUser(dir: string): Promise<ChildOutcome> {
  const modulePath = new URL("../../src/transfer/pack-tree.js", import.meta.url).pathname;
  const script = `
    const { packTrees } = await import(${JSON.stringify(modulePath)});
    const { stream, done } = packTrees([{ hostDir: ${JSON.stringify(dir)}, archivePrefix: "work" }]);
    let streamError;
    try { for await (const chunk of stream) void chunk; } catch (error) { streamError = error.message; }
    let doneError;
    try { await done; } catch (error) { doneError = { name: error.name, path: error.path, message: error.message }; }
    process.stdout.write(JSON.stringify({ doneError, streamError }));
  `;
  const runAsNobody = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    ...runAsNobody,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const output = await collectStream(child.stdout);
  return JSON.parse(output.toString()) as ChildOutcome;
}
