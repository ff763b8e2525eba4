// Tests extractOutputs on archives made by GNU tar and busybox tar: tricky names, every format, sparse files, entry counts, chunking.
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import type { Server } from "node:net";
import { chmod, link, mkdir, open, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { extractOutputs } from "../../src/transfer/extract-outputs.js";
import type { ExtractReport } from "../../src/transfer/extract-outputs.js";
import { randomChunks } from "./tar-fixtures.js";
import { collectStream, makeTempDir, snapshotTree } from "./tree-helpers.js";

const GENEROUS = { maxBytes: 1024 * 1024 * 1024, maxEntries: 10_000 };

/** Names a pod's /outputs may well hold, each one a trap for a tar reader. */
async function makeTrickyTree(root: string): Promise<void> {
  const deep = join(root, "d".repeat(120), "e".repeat(150));
  await mkdir(deep, { recursive: true });
  await writeFile(join(deep, `${"f".repeat(200)}.txt`), "more than 255 bytes of path\n");
  await writeFile(join(root, "n".repeat(101)), "a name of 101 bytes\n");
  await mkdir(join(root, "été"));
  await writeFile(join(root, "été", "日本語-ファイル.txt"), "unicode\n");
  await writeFile(join(root, "🚀.txt"), "emoji\n");
  await writeFile(join(root, "new\nline.txt"), "newline in a name\n");
  await mkdir(join(root, "dir\nwith\nnewlines"));
  await writeFile(join(root, "dir\nwith\nnewlines", "inner\n.txt"), "newlines in dir and name\n");
  await symlink(`${"t".repeat(150)}/${"u".repeat(50)}`, join(root, "long-link"));
  await symlink("été/日本語-ファイル.txt", join(root, "unicode-link"));
  await writeFile(join(root, "empty.txt"), "");
  await writeFile(join(root, "block.bin"), randomBytes(512));
  await writeFile(join(root, "small-limit.bin"), randomBytes(256 * 1024));
  await writeFile(join(root, "over-small-limit.bin"), randomBytes(256 * 1024 + 1));
  await writeFile(join(root, "tool"), "#!/bin/sh\n");
  await chmod(join(root, "tool"), 0o755);
  await mkdir(join(root, "empty-dir"));
  await utimes(join(root, "block.bin"), 86_400, 86_400);
}

/** Names every format can hold: ustar splits the long path into prefix and name, v7 needs under 100 bytes. */
async function makePlainTree(root: string, withPrefixPath: boolean): Promise<void> {
  await mkdir(join(root, "sub"), { recursive: true });
  await writeFile(join(root, "sub", "a.txt"), "a\n");
  await writeFile(join(root, "block.bin"), randomBytes(512));
  await writeFile(join(root, "empty.txt"), "");
  await symlink("sub/a.txt", join(root, "link"));
  if (withPrefixPath) {
    const deep = join(root, "p".repeat(80), "r".repeat(60));
    await mkdir(deep, { recursive: true });
    await writeFile(join(deep, `${"q".repeat(60)}.txt`), "split into prefix and name\n");
  }
}

/** Runs `command` (tar -cf - -C dir . or the like) and resolves with its whole stdout. */
async function archiveOf(command: readonly string[]): Promise<Buffer> {
  const [program, ...args] = command;
  const child = spawn(program ?? "tar", args, { stdio: ["ignore", "pipe", "pipe"] });
  const closed = new Promise<number | null>((resolve) => child.once("close", resolve));
  const [archive, stderr] = await Promise.all([collectStream(child.stdout), collectStream(child.stderr)]);
  const code = await closed;
  assert.equal(code, 0, `${command.join(" ")} failed: ${stderr.toString()}`);
  return archive;
}

function countFindLines(dir: string): number {
  return Number(execFileSync("sh", ["-c", 'find "$1" ! -type s | wc -l', "sh", dir], { encoding: "utf8" }).trim());
}

/** The report with its files as an array, to compare two reports by value. */
function plainReport(report: ExtractReport): unknown {
  return { ...report, files: [...report.files] };
}

describe("extractOutputs with archives made by real tar", () => {
  let workspace = "";
  let tricky = "";
  let destCount = 0;
  const freshDest = (): string => join(workspace, `dest-${(destCount += 1)}`);

  before(async () => {
    workspace = await makeTempDir("extract-real-tar");
    tricky = join(workspace, "tricky");
    await mkdir(tricky);
    await makeTrickyTree(tricky);
  });

  after(async () => {
    await rm(workspace, { recursive: true, force: true });
  });

  for (const [label, command] of [
    ["GNU tar", ["tar", "-cf", "-", "-C"]],
    ["GNU tar --format=posix", ["tar", "--format=posix", "-cf", "-", "-C"]],
    ["GNU tar -b 128 (64 KiB records, as pack-outputs asks)", ["tar", "-b", "128", "-cf", "-", "-C"]],
    ["busybox tar", ["busybox", "tar", "-cf", "-", "-C"]],
  ] as const) {
    it(`recreates the tree of long, unicode and newline names, long link targets and edge sizes from ${label}`, async () => {
      const dest = freshDest();
      const archive = await archiveOf([...command, tricky, "."]);
      const report = await extractOutputs(Readable.from(archive), dest, GENEROUS);
      assert.deepEqual(report.refused, []);
      assert.deepEqual(await snapshotTree(dest), await snapshotTree(tricky));
      assert.equal(report.files.length, 11);
      assert.equal([...report.files].find((entry) => entry.path === "empty.txt")?.size, 0);
      assert.equal(report.entries + report.nameNewlines, countFindLines(tricky));
    });
  }

  for (const format of ["gnu", "oldgnu", "posix", "ustar", "v7"] as const) {
    it(`reads GNU tar's ${format} format`, async () => {
      const source = join(workspace, `plain-${format}`);
      await makePlainTree(source, format !== "v7");
      const dest = freshDest();
      const archive = await archiveOf(["tar", `--format=${format}`, "-cf", "-", "-C", source, "."]);
      const report = await extractOutputs(Readable.from(archive), dest, GENEROUS);
      assert.deepEqual(report.refused, []);
      assert.deepEqual(await snapshotTree(dest), await snapshotTree(source));
      assert.equal(report.entries, countFindLines(source));
    });
  }

  describe("entries and nameNewlines", () => {
    let counted = "";
    let server: Server | undefined;

    before(async () => {
      counted = join(workspace, "counted");
      await mkdir(join(counted, "dir\nwith\nnewlines", "empty"), { recursive: true });
      await writeFile(join(counted, "dir\nwith\nnewlines", "two\n\nnewlines"), "x");
      await writeFile(join(counted, "plain.txt"), "plain");
      await link(join(counted, "plain.txt"), join(counted, "hard-link"));
      await symlink("plain.txt", join(counted, "sym\nlink"));
      execFileSync("mkfifo", [join(counted, "fifo\n")]);
      // A socket: find lists it but tar leaves it out, hence `! -type s`.
      const listening = createServer();
      server = listening;
      await new Promise<void>((resolve) => listening.listen(join(counted, "socket"), resolve));
    });

    after(() => {
      server?.close();
    });

    for (const [label, command] of [
      ["GNU tar", ["tar", "-cf", "-", "-C"]],
      ["busybox tar", ["busybox", "tar", "-cf", "-", "-C"]],
    ] as const) {
      it(`add up to the line count of find ! -type s for ${label}'s archive, refused hard link and fifo included`, async () => {
        const report = await extractOutputs(
          Readable.from(await archiveOf([...command, counted, "."])),
          freshDest(),
          GENEROUS,
        );
        // tar archives the directory in readdir order: either name of the pair may be the hard link.
        const reasons = new Map(report.refused.map((entry) => [entry.path, entry.reason]));
        assert.equal(reasons.get("./fifo\n"), "fifo is not allowed");
        const linkPath = reasons.has("./hard-link") ? "./hard-link" : "./plain.txt";
        assert.match(reasons.get(linkPath) ?? "", /^hard link to "\.\/(plain\.txt|hard-link)" is not allowed$/);
        assert.equal(reasons.size, 2);
        // "./", the directory, its subdirectory and file, plain.txt, hard-link, the symlink and the fifo.
        assert.equal(report.entries, 8);
        assert.equal(report.nameNewlines, 2 + 2 + 4 + 1 + 1);
        assert.equal(report.entries + report.nameNewlines, countFindLines(counted));
      });
    }
  });

  describe("with GNU sparse files", () => {
    let sparse = "";

    before(async () => {
      sparse = join(workspace, "sparse");
      await mkdir(sparse);
      await writeFile(join(sparse, "before.txt"), "before\n");
      // 30 data regions separated by holes: more than old GNU headers hold, so extension blocks follow.
      const handle = await open(join(sparse, "holes.bin"), "w");
      for (let region = 0; region < 30; region += 1)
        await handle.write(Buffer.from([region + 1]), 0, 1, region * 64 * 1024);
      await handle.truncate(30 * 64 * 1024);
      await handle.close();
      await writeFile(join(sparse, "zz-after.txt"), "after\n");
    });

    for (const options of [
      ["--format=gnu"],
      ["--format=posix", "--sparse-version=0.0"],
      ["--format=posix", "--sparse-version=0.1"],
      ["--format=posix", "--sparse-version=1.0"],
    ]) {
      it(`refuses a sparse file from tar -S ${options.join(" ")}, skips exactly its stored bytes and extracts what follows`, async () => {
        const archive = await archiveOf(["tar", "-S", ...options, "-cf", "-", "-C", sparse, "."]);
        const report = await extractOutputs(Readable.from(archive), freshDest(), GENEROUS);
        assert.deepEqual(report.refused, [
          { path: "./holes.bin", reason: "sparse file (GNU tar --sparse) is not supported" },
        ]);
        assert.deepEqual(
          [...report.files].map((entry) => entry.path),
          ["before.txt", "zz-after.txt"],
        );
        assert.equal(report.entries, 4);
      });
    }
  });

  describe("fed in chunks of any size", () => {
    let archive: Buffer = Buffer.alloc(0);
    let whole: ExtractReport;
    let wholeTree: Awaited<ReturnType<typeof snapshotTree>>;

    before(async () => {
      archive = await archiveOf(["tar", "--format=posix", "-cf", "-", "-C", tricky, "."]);
      const dest = freshDest();
      whole = await extractOutputs(Readable.from(archive), dest, GENEROUS);
      wholeTree = await snapshotTree(dest);
    });

    it("gives the same report and tree when the archive comes one byte at a time", { timeout: 120_000 }, async () => {
      const dest = freshDest();
      const bytes = Array.from({ length: archive.length }, (_, index) => archive.subarray(index, index + 1));
      assert.deepEqual(plainReport(await extractOutputs(Readable.from(bytes), dest, GENEROUS)), plainReport(whole));
      assert.deepEqual(await snapshotTree(dest), wholeTree);
    });

    for (const [seed, max] of [
      [7, 100],
      [8, 4096],
      [9, 100_000],
      [10, 300_000],
    ] as const) {
      it(`gives the same report and tree in random chunks of up to ${max} bytes (seed ${seed})`, async () => {
        const dest = freshDest();
        assert.deepEqual(
          plainReport(await extractOutputs(Readable.from(randomChunks(archive, seed, max)), dest, GENEROUS)),
          plainReport(whole),
        );
        assert.deepEqual(await snapshotTree(dest), wholeTree);
      });
    }
  });
});
