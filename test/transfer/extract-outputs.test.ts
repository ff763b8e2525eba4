// Tests extractOutputs against hostile, truncated, endless and real GNU/busybox output archives.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, link, lstat, mkdir, readFile, readdir, readlink, rm, symlink, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { OutputArchiveError, extractOutputs } from "../../src/transfer/extract-outputs.js";
import type { ExtractReport } from "../../src/transfer/extract-outputs.js";
import { base256, endOfArchive, paxBody, rawEntry } from "./tar-fixtures.js";
import {
  buildArchive,
  endlessEntriesArchive,
  endlessFileArchive,
  makeTempDir,
  sha256Of,
  snapshotTree,
} from "./tree-helpers.js";
import type { ArchiveEntry } from "./tree-helpers.js";

const GENEROUS = { maxBytes: 1024 * 1024 * 1024, maxEntries: 10_000 };
const ABSOLUTE_PROBE = `/tmp/knotless-extract-absolute-probe-${process.pid}.txt`;

const file = (name: string, content: string | Buffer, mode = 0o644): ArchiveEntry => ({
  header: { name, mode, type: "file" },
  content,
});
const dir = (name: string, mode = 0o755): ArchiveEntry => ({ header: { name, mode, type: "directory" } });
const symlinkEntry = (name: string, target: string): ArchiveEntry => ({
  header: { name, type: "symlink", linkname: target },
});

/** Every hostile entry the extractor must refuse, interleaved with good ones. */
function hostileEntries(): readonly ArchiveEntry[] {
  return [
    dir("./"),
    file("./good.txt", "good content\n"),
    dir("./dir/"),
    file("./dir/nested.txt", "nested content\n"),
    file(ABSOLUTE_PROBE, "absolute"),
    file("../x.txt", "climb"),
    file("./../sentinel/climb.txt", "climb"),
    file("a/../../x.txt", "climb inside"),
    file("../é-pax-escape.txt", "long header path"),
    symlinkEntry("./passwd-link", "/etc/passwd"),
    symlinkEntry("./up-link", "../../x"),
    symlinkEntry("./sentinel-link", "../sentinel"),
    symlinkEntry("./dir/inside-link", "../good.txt"),
    symlinkEntry("./dir-link", "dir"),
    file("./dir-link/through.txt", "through a symlink"),
    symlinkEntry("./x", "."),
    symlinkEntry("./m", "x/.."),
    { header: { name: "./hard-link", type: "link", linkname: "./good.txt" } },
    { header: { name: "./hard-link-out", type: "link", linkname: "/etc/passwd" } },
    { header: { name: "./tty", type: "character-device", devmajor: 5, devminor: 0 } },
    { header: { name: "./disk", type: "block-device", devmajor: 8, devminor: 0 } },
    { header: { name: "./pipe", type: "fifo" } },
    file("./setuid.sh", "#!/bin/sh\n", 0o4755),
    file("./wide-open.txt", "open\n", 0o6777),
    file("./locked.txt", "locked\n", 0o200),
    file("./good.txt/under-a-file.txt", "parent is a file"),
    file("./dir", "a file over a directory"),
  ];
}

/**
 * Serves `archive` in chunks of varying size (1 byte to 80 KiB) read into a few reusable buffers, as kubectl's
 * pooled stdout does: a buffer given back is scribbled over and read into again at once.
 */
class RecyclingSource extends Readable {
  private readonly free: Buffer[] = [];
  private offset = 0;
  private step = 0;
  buffersMade = 0;
  reuses = 0;

  constructor(private readonly archive: Buffer) {
    super();
  }

  giveBack(chunk: Buffer): void {
    const buffer = Buffer.from(chunk.buffer, 0, 80 * 1024);
    buffer.fill(0xee);
    this.free.push(buffer);
  }

  override _read(): void {
    if (this.offset >= this.archive.length) {
      this.push(null);
      return;
    }
    const sizes = [80 * 1024, 1, 5000, 64 * 1024, 700, 30_000];
    const size = Math.min(sizes[this.step++ % sizes.length]!, this.archive.length - this.offset);
    const reused = this.free.pop();
    if (reused) this.reuses += 1;
    else this.buffersMade += 1;
    const buffer = reused ?? Buffer.allocUnsafeSlow(80 * 1024);
    this.archive.copy(buffer, 0, this.offset, this.offset + size);
    this.offset += size;
    // Pushed from a later turn, like a socket's reads: never within the extractor's own call stack.
    setImmediate(() => this.push(buffer.subarray(0, size)));
  }
}

describe("extractOutputs", () => {
  let workspace = "";
  let sentinel = "";

  before(async () => {
    workspace = await makeTempDir("extract");
    sentinel = join(workspace, "sentinel");
    await mkdir(sentinel);
  });

  after(async () => {
    await rm(workspace, { recursive: true, force: true });
  });

  describe("with a hostile archive", () => {
    let parent = "";
    let dest = "";
    let report: ExtractReport;

    before(async () => {
      parent = join(workspace, "hostile");
      dest = join(parent, "dest");
      await mkdir(join(parent, "sentinel"), { recursive: true });
      report = await extractOutputs(Readable.from(await buildArchive(hostileEntries())), dest, GENEROUS);
    });

    it("writes the good files with their sizes and sha256, sorted by path", () => {
      assert.deepEqual(
        [...report.files],
        [
          { path: "dir/nested.txt", size: 15, sha256: sha256Of("nested content\n") },
          { path: "good.txt", size: 13, sha256: sha256Of("good content\n") },
          { path: "locked.txt", size: 7, sha256: sha256Of("locked\n") },
          { path: "setuid.sh", size: 10, sha256: sha256Of("#!/bin/sh\n") },
          { path: "wide-open.txt", size: 5, sha256: sha256Of("open\n") },
        ],
      );
      assert.equal(report.bytes, 15 + 13 + 7 + 10 + 5);
      assert.equal(report.limitReached, false);
    });

    it("refuses every hostile entry with a reason", () => {
      const reasons = new Map(report.refused.map((entry) => [entry.path, entry.reason]));
      const expected: Record<string, RegExp> = {
        [ABSOLUTE_PROBE]: /^absolute path$/,
        "../x.txt": /\.\. component/,
        "./../sentinel/climb.txt": /\.\. component/,
        "a/../../x.txt": /\.\. component/,
        "../é-pax-escape.txt": /\.\. component/,
        "./passwd-link": /is absolute/,
        "./up-link": /resolves outside the destination/,
        "./sentinel-link": /resolves outside the destination/,
        "./dir-link/through.txt": /parent dir-link is a symlink; refusing to write through it/,
        "./m": /has \.\. after a name/,
        "./hard-link": /^hard link to "\.\/good\.txt" is not allowed$/,
        "./hard-link-out": /^hard link to "\/etc\/passwd" is not allowed$/,
        "./tty": /^character device is not allowed$/,
        "./disk": /^block device is not allowed$/,
        "./pipe": /^fifo is not allowed$/,
        "./good.txt/under-a-file.txt": /parent good\.txt is a regular file, not a directory/,
        "./dir": /a directory already exists at this path/,
      };
      assert.deepEqual([...reasons.keys()].sort(), Object.keys(expected).sort());
      for (const [path, pattern] of Object.entries(expected)) assert.match(reasons.get(path) ?? "", pattern, path);
    });

    it("counts every member, refused ones and the root included, but not the PAX header of the long name", () => {
      assert.equal(report.entries, hostileEntries().length);
      assert.equal(report.nameNewlines, 0);
    });

    it("writes nothing outside the destination", async () => {
      assert.deepEqual(await readdir(join(parent, "sentinel")), []);
      assert.deepEqual((await readdir(parent)).sort(), ["dest", "sentinel"]);
      assert.equal(existsSync(join(workspace, "x.txt")), false);
      assert.equal(existsSync(ABSOLUTE_PROBE), false);
    });

    it("leaves exactly the allowed files, directories and inside symlinks in the destination", async () => {
      const snapshot = await snapshotTree(dest);
      assert.deepEqual(
        [...snapshot.keys()],
        [
          "dir",
          "dir/inside-link",
          "dir/nested.txt",
          "dir-link",
          "good.txt",
          "locked.txt",
          "setuid.sh",
          "wide-open.txt",
          "x",
        ],
      );
      assert.equal(await readlink(join(dest, "dir-link")), "dir");
      assert.equal(await readlink(join(dest, "dir/inside-link")), "../good.txt");
      assert.equal(await readlink(join(dest, "x")), ".");
    });

    it("strips setuid, setgid, sticky and group/other write bits but keeps the exec bit", async () => {
      const modeOf = async (path: string): Promise<number> => (await lstat(join(dest, path))).mode & 0o7777;
      assert.equal(await modeOf("setuid.sh"), 0o755);
      assert.equal(await modeOf("wide-open.txt"), 0o755);
      assert.equal(await modeOf("locked.txt"), 0o600);
      assert.equal(await modeOf("good.txt"), 0o644);
    });
  });

  it("creates a missing destination directory, parents included", async () => {
    const dest = join(workspace, "created", "deep", "dest");
    const report = await extractOutputs(Readable.from(await buildArchive([file("./a.txt", "a")])), dest, GENEROUS);
    assert.deepEqual(
      [...report.files].map((entry) => entry.path),
      ["a.txt"],
    );
    assert.equal(await readFile(join(dest, "a.txt"), "utf8"), "a");
  });

  it("gives files their mode whatever the umask, a restrictive one included", async () => {
    const previous = process.umask(0o077);
    try {
      const dest = join(workspace, "restrictive-umask");
      await extractOutputs(
        Readable.from(
          await buildArchive([
            file("./run.sh", "#!/bin/sh\n", 0o755),
            file("./data.txt", "d", 0o644),
            file("./private.txt", "p", 0o600),
          ]),
        ),
        dest,
        GENEROUS,
      );
      const modeOf = async (path: string): Promise<number> => (await lstat(join(dest, path))).mode & 0o7777;
      assert.equal(await modeOf("run.sh"), 0o755);
      assert.equal(await modeOf("data.txt"), 0o644);
      assert.equal(await modeOf("private.txt"), 0o600);
    } finally {
      process.umask(previous);
    }
  });

  it("reads a source that yields plain Uint8Array chunks", async () => {
    const dest = join(workspace, "uint8array-source");
    const archive = await buildArchive([file("./a.txt", "a"), file("./b.txt", "b")]);
    const chunks = [new Uint8Array(archive.subarray(0, 700)), new Uint8Array(archive.subarray(700))];
    const report = await extractOutputs(Readable.from(chunks), dest, GENEROUS);
    assert.deepEqual(
      [...report.files].map((entry) => entry.path),
      ["a.txt", "b.txt"],
    );
  });

  it("refuses to write through or over a symlink that already exists in the destination", async () => {
    const dest = join(workspace, "preexisting");
    await mkdir(dest);
    await symlink("../sentinel", join(dest, "pre"));
    const archive = await buildArchive([
      file("./pre/x.txt", "escape"),
      file("./pre", "replace the link"),
      symlinkEntry("./pre", "elsewhere"),
    ]);
    const report = await extractOutputs(Readable.from(archive), dest, GENEROUS);
    assert.deepEqual([...report.files], []);
    assert.deepEqual(
      report.refused.map((entry) => entry.path),
      ["./pre/x.txt", "./pre", "./pre"],
    );
    assert.deepEqual(await readdir(sentinel), []);
  });

  it("replaces a duplicated file with the later entry and lists it once", async () => {
    const dest = join(workspace, "duplicate");
    const archive = await buildArchive([file("./same.txt", "first"), file("./same.txt", "second!")]);
    const report = await extractOutputs(Readable.from(archive), dest, GENEROUS);
    assert.deepEqual([...report.files], [{ path: "same.txt", size: 7, sha256: sha256Of("second!") }]);
    assert.equal(await readFile(join(dest, "same.txt"), "utf8"), "second!");
  });

  it("replaces an existing file without writing through a hard link to it", async () => {
    const dest = join(workspace, "hardlinked");
    await mkdir(dest);
    const outside = join(sentinel, "..", "outside-target.txt");
    await writeFile(outside, "untouched");
    await link(outside, join(dest, "victim.txt"));
    await extractOutputs(Readable.from(await buildArchive([file("./victim.txt", "overwritten")])), dest, GENEROUS);
    assert.equal(await readFile(outside, "utf8"), "untouched");
    assert.equal(await readFile(join(dest, "victim.txt"), "utf8"), "overwritten");
    await rm(outside);
  });

  it("refuses an entry whose name is too long for the host file system and goes on", async () => {
    const dest = join(workspace, "too-long");
    const archive = await buildArchive([file(`./${"n".repeat(300)}.txt`, "long"), file("./after.txt", "after")]);
    const report = await extractOutputs(Readable.from(archive), dest, GENEROUS);
    assert.deepEqual(report.refused, [
      { path: `./${"n".repeat(300)}.txt`, reason: "name too long for the host file system" },
    ]);
    assert.deepEqual(
      [...report.files].map((entry) => entry.path),
      ["after.txt"],
    );
  });

  describe("with directories it created or checked earlier in the same archive", () => {
    it("refuses a symlink entry over a directory it created, then a file through that path", async () => {
      const dest = join(workspace, "dir-then-symlink");
      const archive = await buildArchive([
        dir("./d/"),
        file("./d/first.txt", "first"),
        symlinkEntry("./d", "../sentinel-relative"),
        symlinkEntry("./d", "."),
        file("./d/second.txt", "second"),
      ]);
      const report = await extractOutputs(Readable.from(archive), dest, GENEROUS);
      assert.deepEqual(
        report.refused.map((entry) => [entry.path, entry.reason]),
        [
          ["./d", 'symlink target "../sentinel-relative" resolves outside the destination'],
          ["./d", "a directory already exists at this path"],
        ],
      );
      assert.deepEqual(
        [...report.files].map((entry) => entry.path),
        ["d/first.txt", "d/second.txt"],
      );
      assert.equal((await lstat(join(dest, "d"))).isDirectory(), true, "d is still the real directory");
    });

    it("refuses a file under a symlink that took the place of a directory it never created", async () => {
      const dest = join(workspace, "symlink-then-dir");
      const archive = await buildArchive([
        symlinkEntry("./s", "."),
        file("./s/through.txt", "through"),
        dir("./s/"),
        file("./s/again.txt", "again"),
        file("./s/deep/er.txt", "deeper"),
      ]);
      const report = await extractOutputs(Readable.from(archive), dest, GENEROUS);
      assert.deepEqual(
        report.refused.map((entry) => [entry.path, entry.reason]),
        [
          ["./s/through.txt", "parent s is a symlink; refusing to write through it"],
          ["./s/", "a symlink already exists at this path"],
          ["./s/again.txt", "parent s is a symlink; refusing to write through it"],
          ["./s/deep/er.txt", "parent s is a symlink; refusing to write through it"],
        ],
      );
      assert.deepEqual([...report.files], []);
      assert.deepEqual((await readdir(dest)).sort(), ["s"]);
    });

    it("refuses a file through a symlink planted under a known directory by an earlier entry", async () => {
      const dest = join(workspace, "symlink-under-known-dir");
      const archive = await buildArchive([
        file("./a/b/one.txt", "one"),
        symlinkEntry("./a/c", "b"),
        file("./a/c/two.txt", "two"),
        file("./a/b/three.txt", "three"),
      ]);
      const report = await extractOutputs(Readable.from(archive), dest, GENEROUS);
      assert.deepEqual(
        report.refused.map((entry) => entry.path),
        ["./a/c/two.txt"],
      );
      assert.deepEqual(
        [...report.files].map((entry) => entry.path),
        ["a/b/one.txt", "a/b/three.txt"],
      );
      assert.deepEqual((await readdir(join(dest, "a/b"))).sort(), ["one.txt", "three.txt"]);
    });

    it("refuses a file over a directory it created and keeps writing under that directory", async () => {
      const dest = join(workspace, "file-over-known-dir");
      const archive = await buildArchive([file("./k/x.txt", "x"), file("./k", "not a dir"), file("./k/y.txt", "y")]);
      const report = await extractOutputs(Readable.from(archive), dest, GENEROUS);
      assert.deepEqual(report.refused, [{ path: "./k", reason: "a directory already exists at this path" }]);
      assert.deepEqual(
        [...report.files].map((entry) => entry.path),
        ["k/x.txt", "k/y.txt"],
      );
    });
  });

  it("writes a multi-MiB file with its hash and size, and replaces it by a later small one", async () => {
    const dest = join(workspace, "large-then-small");
    const large = randomBytes(3 * 1024 * 1024 + 5);
    const archive = await buildArchive([
      file("./big.bin", large),
      file("./after.txt", "after"),
      file("./big.bin", "small now"),
    ]);
    const report = await extractOutputs(Readable.from(archive), dest, GENEROUS);
    assert.deepEqual(
      [...report.files],
      [
        { path: "after.txt", size: 5, sha256: sha256Of("after") },
        { path: "big.bin", size: 9, sha256: sha256Of("small now") },
      ],
    );
    assert.equal(report.bytes, large.length + 5 + 9);
    assert.equal(await readFile(join(dest, "big.bin"), "utf8"), "small now");
  });

  it("writes a large file intact and lists it with the size and sha256 of its content", async () => {
    const dest = join(workspace, "large-file");
    const large = randomBytes(5 * 1024 * 1024 + 123);
    const report = await extractOutputs(
      Readable.from(await buildArchive([file("./big.bin", large, 0o755)])),
      dest,
      GENEROUS,
    );
    assert.deepEqual([...report.files], [{ path: "big.bin", size: large.length, sha256: sha256Of(large) }]);
    assert.deepEqual(await readFile(join(dest, "big.bin")), large);
    assert.equal((await lstat(join(dest, "big.bin"))).mode & 0o7777, 0o755);
  });

  it("writes every file intact from a source that reuses each chunk's buffer as soon as it is given back", async () => {
    const dest = join(workspace, "recycled-chunks");
    const small = Array.from({ length: 300 }, (_, index) =>
      file(`./d${index % 7}/f${index}.txt`, randomBytes(index * 37)),
    );
    const large = [file("./big-1.bin", randomBytes(700_000)), file("./big-2.bin", randomBytes(1_300_001))];
    const entries = [...small.slice(0, 150), large[0]!, ...small.slice(150), large[1]!];
    const source = new RecyclingSource(await buildArchive(entries));
    const report = await extractOutputs(source, dest, GENEROUS, { releaseChunk: (chunk) => source.giveBack(chunk) });
    const expected = entries.map((entry) => ({
      path: entry.header.name.slice(2),
      size: entry.content!.length,
      sha256: sha256Of(entry.content!),
    }));
    assert.deepEqual(
      [...report.files],
      expected.sort((a, b) => (a.path < b.path ? -1 : 1)),
    );
    const onDisk = await snapshotTree(dest);
    for (const { path, sha256 } of expected)
      assert.equal((onDisk.get(path) as { sha256?: string } | undefined)?.sha256, sha256, path);
    assert.ok(
      source.reuses > source.buffersMade,
      `the source reused buffers ${source.reuses} times with ${source.buffersMade} made: the test exercised no reuse`,
    );
  });

  it("sets each file's mtime from the archive, fractional PAX times and times before 1970 included", async () => {
    const dest = join(workspace, "mtimes");
    const archive = Buffer.concat([
      rawEntry({ name: "./octal.txt", mtime: 1_234_567_890 }, "octal"),
      rawEntry({ typeflag: "x" }, paxBody({ mtime: "1700000000.25" })),
      rawEntry({ name: "./pax.txt" }, "pax"),
      rawEntry({ name: "./before-1970.txt", mtimeField: base256(-86_400n) }, "old"),
      rawEntry({ name: "./large-before-1970.bin", mtimeField: base256(-1n) }, Buffer.alloc(300 * 1024, 1)),
      endOfArchive(),
    ]);
    await extractOutputs(Readable.from(archive), dest, GENEROUS);
    const mtimeOf = async (path: string): Promise<number> => (await lstat(join(dest, path))).mtimeMs;
    assert.equal(await mtimeOf("octal.txt"), 1_234_567_890_000);
    assert.equal(await mtimeOf("pax.txt"), 1_700_000_000_250);
    assert.equal(await mtimeOf("before-1970.txt"), -86_400_000);
    assert.equal(await mtimeOf("large-before-1970.bin"), -1000);
  });

  it("lets timers run while it extracts thousands of small files", async () => {
    const dest = join(workspace, "event-loop");
    const entries = Array.from({ length: 3000 }, (_, index) => file(`./many/f${index}.txt`, `content ${index}\n`));
    const archive = await buildArchive(entries);
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 1);
    const started = performance.now();
    try {
      const report = await extractOutputs(Readable.from(archive), dest, GENEROUS);
      assert.equal(report.files.length, 3000);
    } finally {
      clearInterval(timer);
    }
    const elapsed = performance.now() - started;
    // Slices last 5 ms: a run of more than 20 ms must have let the 1 ms timer fire.
    if (elapsed > 20) assert.ok(ticks > 0, `no timer ran during ${elapsed.toFixed(0)} ms of extraction`);
  });

  describe("limits", () => {
    it("refuses the entry that would pass maxBytes and stops there", async () => {
      const dest = join(workspace, "size-limit");
      const archive = await buildArchive([
        file("./a", "0123456789"),
        file("./b", "0123456789"),
        file("./c", "0123456789"),
        file("./d", "x"),
      ]);
      const report = await extractOutputs(Readable.from(archive), dest, { maxBytes: 25, maxEntries: 100 });
      assert.deepEqual(
        [...report.files].map((entry) => entry.path),
        ["a", "b"],
      );
      assert.equal(report.bytes, 20);
      assert.equal(report.limitReached, true);
      assert.equal(report.refused.length, 1);
      assert.equal(report.refused[0]?.path, "./c");
      assert.match(report.refused[0]?.reason ?? "", /^over the size limit/);
      assert.deepEqual((await readdir(dest)).sort(), ["a", "b"]);
    });

    it("accepts an archive whose content is exactly maxBytes", async () => {
      const dest = join(workspace, "size-exact");
      const archive = await buildArchive([file("./a", "0123456789"), file("./b", "0123456789")]);
      const report = await extractOutputs(Readable.from(archive), dest, { maxBytes: 20, maxEntries: 100 });
      assert.equal(report.limitReached, false);
      assert.equal(report.bytes, 20);
    });

    it("counts the bodies of refused entries against maxBytes", async () => {
      const dest = join(workspace, "refused-body-limit");
      const archive = await buildArchive([file("../big", "y".repeat(100)), file("./after", "z")]);
      const report = await extractOutputs(Readable.from(archive), dest, { maxBytes: 50, maxEntries: 100 });
      assert.equal(report.limitReached, true);
      assert.deepEqual([...report.files], []);
      assert.match(report.refused[0]?.reason ?? "", /\.\. component; over the size limit/);
    });

    it("refuses the entry that would pass maxEntries and stops there", async () => {
      const dest = join(workspace, "entry-limit");
      const archive = await buildArchive([dir("./"), file("./a", "a"), file("./b", "b"), file("./c", "c")]);
      const report = await extractOutputs(Readable.from(archive), dest, { maxBytes: 1000, maxEntries: 3 });
      assert.deepEqual(
        [...report.files].map((entry) => entry.path),
        ["a", "b"],
      );
      assert.deepEqual(report.refused, [
        { path: "./c", reason: "over the entry limit: the archive has more than 3 entries" },
      ]);
      assert.equal(report.limitReached, true);
    });

    it("resolves at the size limit even when the source never ends", { timeout: 20_000 }, async () => {
      const dest = join(workspace, "endless-bytes");
      const source = endlessFileArchive([file("./small.txt", "small")], "./endless.bin", 2 ** 40);
      try {
        const report = await extractOutputs(source, dest, { maxBytes: 1024 * 1024, maxEntries: 100 });
        assert.equal(report.limitReached, true);
        assert.deepEqual(
          [...report.files].map((entry) => entry.path),
          ["small.txt"],
        );
        assert.equal(report.refused[0]?.path, "./endless.bin");
        assert.match(report.refused[0]?.reason ?? "", /^over the size limit/);
        assert.equal(source.destroyed, false, "the caller, not the extractor, kills the source");
      } finally {
        source.destroy();
      }
    });

    it("resolves at the entry limit even when the source never ends", { timeout: 20_000 }, async () => {
      const dest = join(workspace, "endless-entries");
      const source = endlessEntriesArchive();
      try {
        const report = await extractOutputs(source, dest, { maxBytes: 1024 * 1024, maxEntries: 50 });
        assert.equal(report.limitReached, true);
        assert.equal(report.files.length, 50);
        assert.deepEqual(report.refused, [
          { path: "./many/f50.txt", reason: "over the entry limit: the archive has more than 50 entries" },
        ]);
      } finally {
        source.destroy();
      }
    });

    it("rejects negative or fractional limits", async () => {
      const dest = join(workspace, "bad-limits");
      await assert.rejects(
        extractOutputs(Readable.from(Buffer.alloc(0)), dest, { maxBytes: -1, maxEntries: 1 }),
        TypeError,
      );
      await assert.rejects(
        extractOutputs(Readable.from(Buffer.alloc(0)), dest, { maxBytes: 1, maxEntries: 1.5 }),
        TypeError,
      );
    });
  });

  describe("broken archives", () => {
    it("rejects an archive cut in the middle of a file and reports what was already written", async () => {
      const dest = join(workspace, "cut-mid-file");
      const archive = await buildArchive([file("./first.txt", "complete"), file("./second.bin", "s".repeat(5000))]);
      const cut = archive.subarray(0, 512 + 512 + 512 + 2048);
      await assert.rejects(extractOutputs(Readable.from(cut), dest, GENEROUS), (error: unknown) => {
        assert.ok(error instanceof OutputArchiveError);
        assert.match(error.message, /output archive is truncated or corrupt after 2 entries/);
        assert.deepEqual(
          [...error.partial.files].map((entry) => entry.path),
          ["first.txt"],
        );
        return true;
      });
      assert.deepEqual(await readdir(dest), ["first.txt"], "the half-written file is removed");
    });

    it("rejects an archive cut exactly after an entry, without its end-of-archive blocks", async () => {
      const dest = join(workspace, "cut-at-boundary");
      const archive = await buildArchive([file("./first.txt", "complete")]);
      const cut = archive.subarray(0, 1024);
      await assert.rejects(extractOutputs(Readable.from(cut), dest, GENEROUS), /ends without an end-of-archive block/);
    });

    it("rejects an archive cut inside a header block", async () => {
      const dest = join(workspace, "cut-mid-header");
      const archive = await buildArchive([file("./first.txt", "complete"), file("./second.txt", "second")]);
      await assert.rejects(
        extractOutputs(Readable.from(archive.subarray(0, 1024 + 100)), dest, GENEROUS),
        (error: unknown) => {
          assert.ok(error instanceof OutputArchiveError);
          assert.equal(
            error.message,
            "output archive is truncated or corrupt after 1 entries: it ends inside a header block",
          );
          assert.deepEqual(
            [...error.partial.files].map((entry) => entry.path),
            ["first.txt"],
          );
          return true;
        },
      );
    });

    it("rejects an archive cut in the padding after a file's content", async () => {
      const dest = join(workspace, "cut-in-padding");
      const archive = await buildArchive([file("./first.txt", "complete")]);
      await assert.rejects(
        extractOutputs(Readable.from(archive.subarray(0, 600)), dest, GENEROUS),
        /truncated or corrupt after 1 entries: it ends inside the padding after "\.\/first\.txt"/,
      );
    });

    it("accepts an archive that ends with a single zero block, as GNU tar does", async () => {
      const dest = join(workspace, "single-zero-block");
      const archive = await buildArchive([file("./first.txt", "complete")]);
      const report = await extractOutputs(Readable.from(archive.subarray(0, 1024 + 512)), dest, GENEROUS);
      assert.deepEqual(
        [...report.files].map((entry) => entry.path),
        ["first.txt"],
      );
    });

    it("rejects anything but zero padding after the end-of-archive block", async () => {
      const dest = join(workspace, "after-the-end");
      const archive = await buildArchive([file("./first.txt", "complete")]);
      const smuggled = Buffer.concat([archive, await buildArchive([file("./smuggled.txt", "after the end")])]);
      await assert.rejects(
        extractOutputs(Readable.from(smuggled), dest, GENEROUS),
        /truncated or corrupt after 1 entries: Invalid tar archive: data after the end-of-archive block/,
      );
      assert.deepEqual(await readdir(dest), ["first.txt"]);
    });

    it("removes a large file cut in the middle of its content", async () => {
      const dest = join(workspace, "cut-mid-large-file");
      const archive = await buildArchive([
        file("./first.txt", "complete"),
        file("./large.bin", randomBytes(3 * 1024 * 1024)),
      ]);
      await assert.rejects(
        extractOutputs(Readable.from(archive.subarray(0, 2 * 1024 * 1024)), dest, GENEROUS),
        (error: unknown) => {
          assert.ok(error instanceof OutputArchiveError);
          assert.match(
            error.message,
            /truncated or corrupt after 2 entries: it ends inside the content of "\.\/large\.bin"/,
          );
          assert.deepEqual(
            [...error.partial.files].map((entry) => entry.path),
            ["first.txt"],
          );
          return true;
        },
      );
      assert.deepEqual(await readdir(dest), ["first.txt"], "the half-written file is removed");
    });

    it("removes a large file whose source fails while its content is being written", async () => {
      const dest = join(workspace, "source-fails-mid-large-file");
      const archive = await buildArchive([file("./large.bin", randomBytes(3 * 1024 * 1024))]);
      let offset = 0;
      const source = new Readable({
        read() {
          if (offset >= 2 * 1024 * 1024) {
            this.destroy(new Error("kubectl exec lost the connection"));
            return;
          }
          this.push(archive.subarray(offset, offset + 64 * 1024));
          offset += 64 * 1024;
        },
      });
      await assert.rejects(
        extractOutputs(source, dest, GENEROUS),
        /reading the output archive failed: kubectl exec lost the connection/,
      );
      assert.deepEqual(await readdir(dest), [], "the half-written file is removed");
    });

    it("rejects an empty archive", async () => {
      const dest = join(workspace, "empty-archive");
      await assert.rejects(
        extractOutputs(Readable.from(Buffer.alloc(0)), dest, GENEROUS),
        /output archive is truncated: it is empty/,
      );
    });

    it("rejects an archive whose header checksum is wrong", async () => {
      const dest = join(workspace, "corrupt-header");
      const archive = Buffer.from(await buildArchive([file("./a.txt", "a"), file("./b.txt", "b")]));
      archive[1024 + 10] = 0x41;
      await assert.rejects(extractOutputs(Readable.from(archive), dest, GENEROUS), (error: unknown) => {
        assert.ok(error instanceof OutputArchiveError);
        assert.match(error.message, /truncated or corrupt after 1 entries: Invalid tar header/);
        assert.deepEqual(
          [...error.partial.files].map((entry) => entry.path),
          ["a.txt"],
        );
        return true;
      });
    });

    it("rejects when the source is destroyed before its end without an error", async () => {
      const dest = join(workspace, "source-destroyed");
      const archive = await buildArchive([file("./a.txt", "a")]);
      let pushed = false;
      const source = new Readable({
        read() {
          if (pushed) return;
          pushed = true;
          this.push(archive.subarray(0, 512));
          setImmediate(() => this.destroy());
        },
      });
      await assert.rejects(extractOutputs(source, dest, GENEROUS), /its source closed before the end/);
    });

    it("rejects when the source stream fails", async () => {
      const dest = join(workspace, "source-error");
      const source = new Readable({
        read() {
          this.destroy(new Error("kubectl exec lost the connection"));
        },
      });
      await assert.rejects(
        extractOutputs(source, dest, GENEROUS),
        /reading the output archive failed: kubectl exec lost the connection/,
      );
    });
  });

  describe("with archives made by real tar in the pod", () => {
    let source = "";

    before(async () => {
      source = join(workspace, "pod-outputs");
      const longDir = `${"d".repeat(60)}/${"e".repeat(60)}`;
      await mkdir(join(source, longDir), { recursive: true });
      await mkdir(join(source, "empty"));
      await writeFile(join(source, "report.json"), '{"ok":true}\n');
      await writeFile(join(source, longDir, `${"f".repeat(90)}.txt`), "deep\n");
      await writeFile(join(source, "tool"), "#!/bin/sh\n");
      await chmod(join(source, "tool"), 0o755);
      await writeFile(join(source, "blob.bin"), randomBytes(2 * 1024 * 1024 + 3));
      await symlink("report.json", join(source, "latest.json"));
    });

    for (const [label, command] of [
      ["GNU tar", ["tar"]],
      ["busybox tar", ["busybox", "tar"]],
    ] as const) {
      it(`extracts ${label}'s archive of the outputs dir with paths relative and no leading ./`, async () => {
        const dest = join(workspace, `from-${command.length}`);
        const [program, ...args] = command;
        const child = spawn(program, [...args, "-cf", "-", "-C", source, "."], {
          stdio: ["ignore", "pipe", "inherit"],
        });
        const report = await extractOutputs(child.stdout, dest, GENEROUS);
        assert.deepEqual(report.refused, []);
        const expected = await snapshotTree(source);
        const expectedFiles = [...expected].filter(([, entry]) => entry.kind === "file");
        assert.deepEqual(
          [...report.files].map((entry) => [entry.path, entry.sha256]),
          expectedFiles.map(([path, entry]) => [path, entry.sha256]),
        );
        assert.deepEqual(await snapshotTree(dest), expected);
      });
    }
  });
});
