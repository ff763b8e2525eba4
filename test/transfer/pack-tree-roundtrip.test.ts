// Tests packTrees on hard names and sizes by extracting with GNU tar, busybox tar and tar-stream; and its stats and trailer.
import { randomBytes } from "node:crypto";
import { chmod, mkdir, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import * as tarStream from "tar-stream";
import { PackError, packTrees } from "../../src/transfer/pack-tree.js";
import type { PackStats, PackTrailer } from "../../src/transfer/pack-tree.js";
import { collectStream, makeTempDir, runWithInput, sha256Of, snapshotTree } from "./tree-helpers.js";
import type { SnapshotEntry } from "./tree-helpers.js";

const FILE_MTIME = new Date("2023-02-03T04:05:06Z");
const DEEP_COMPONENT = "d".repeat(120);
/** 28 directories of 121 bytes: a relative path of about 3,400 bytes, within PATH_MAX with the temp dir in front. */
const DEEP_DIR = Array.from({ length: 28 }, (_, index) => `${DEEP_COMPONENT.slice(2)}${String(index).padStart(2, "0")}`).join("/");
const OVER_256_DIR = ["a".repeat(100), "b".repeat(100), "c".repeat(100)].join("/");
const LONG_TARGET = `${DEEP_DIR}/deep-file.txt`;

/** Files of the hard-names tree: relative path → content. */
const FILES: ReadonlyArray<readonly [string, Buffer]> = [
  ["empty", Buffer.alloc(0)],
  ["one-block.bin", randomBytes(512)],
  ["small-256k.bin", randomBytes(256 * 1024)],
  ["small-256k-plus-1.bin", randomBytes(256 * 1024 + 1)],
  ["five-mib.bin", randomBytes(5 * 1024 * 1024)],
  ["ünïcødé-日本語-😀.txt", Buffer.from("unicode name\n")],
  ["line\nbreak.txt", Buffer.from("a newline in the name\n")],
  ["dir\nwith newline/inner.txt", Buffer.from("inside a directory with a newline\n")],
  [`${"c".repeat(200)}.txt`, Buffer.from("one 204-byte component\n")],
  [`${OVER_256_DIR}/${"f".repeat(100)}`, Buffer.from("a path over 256 bytes\n")],
  [`${"p".repeat(150)}/${"n".repeat(100)}`, Buffer.from("a path that just splits into prefix and name\n")],
  [`${DEEP_DIR}/deep-file.txt`, Buffer.from("deep\n")],
  ["modes/private.txt", Buffer.from("0600\n")],
  ["modes/script.sh", Buffer.from("#!/bin/sh\n")],
];

/** Builds the tree every round trip here packs: hard names, boundary sizes, empty dirs, symlinks, modes. */
async function makeHardNamesTree(dir: string): Promise<void> {
  for (const [path, content] of FILES) {
    await mkdir(join(dir, path, ".."), { recursive: true });
    await writeFile(join(dir, path), content);
    await utimes(join(dir, path), FILE_MTIME, FILE_MTIME);
  }
  await chmod(join(dir, "modes/private.txt"), 0o600);
  await chmod(join(dir, "modes/script.sh"), 0o755);
  await mkdir(join(dir, "empty-dir"));
  await mkdir(join(dir, "nested-empty/a/b"), { recursive: true });
  await mkdir(join(dir, "modes/private-dir"), { mode: 0o700 });
  await chmod(join(dir, "modes/private-dir"), 0o700);
  await symlink(LONG_TARGET, join(dir, "link-long-target"));
  await symlink("ünïcødé-日本語-😀.txt", join(dir, "link-unicode"));
  await symlink("dir\nwith newline", join(dir, "link\nnewline"));
  await runWithInput("mkfifo", [join(dir, "skipped-fifo")], Buffer.alloc(0));
}

/** An archive's members as read by tar-stream, with their content. */
async function readWithTarStream(archive: Buffer): Promise<Array<{ header: tarStream.Header; content: Buffer }>> {
  const extract = tarStream.extract();
  Readable.from([archive]).pipe(extract);
  const members: Array<{ header: tarStream.Header; content: Buffer }> = [];
  for await (const entry of extract) members.push({ header: entry.header, content: await collectStream(entry as unknown as Readable) });
  return members;
}

/** The snapshot tar-stream's view of an archive amounts to, for the members under `prefix/`. */
function snapshotFromMembers(members: ReadonlyArray<{ header: tarStream.Header; content: Buffer }>, prefix: string): Map<string, SnapshotEntry> {
  const snapshot = new Map<string, SnapshotEntry>();
  for (const { header, content } of members) {
    assert.ok(header.name.startsWith(`${prefix}/`), header.name);
    const path = header.name.slice(prefix.length + 1).replace(/\/$/, "");
    const mode = header.mode & 0o7777;
    if (header.type === "directory") snapshot.set(path, { kind: "directory", mode });
    else if (header.type === "symlink") snapshot.set(path, { kind: "symlink", mode: 0, target: header.linkname });
    else if (header.type === "file") snapshot.set(path, { kind: "file", mode, sha256: sha256Of(content), mtimeSeconds: header.mtime.getTime() / 1000 });
    else snapshot.set(path, { kind: "other", mode });
  }
  return snapshot;
}

/** Packs `roots` into one buffer; resolves with it and the stats. */
async function packToBuffer(roots: Parameters<typeof packTrees>[0], options?: Parameters<typeof packTrees>[1]): Promise<{ archive: Buffer; stats: PackStats }> {
  const { stream, done } = packTrees(roots, options);
  const archive = await collectStream(stream);
  return { archive, stats: await done };
}

/** Runs a shell command line and returns its stdout; fails the test on a non-zero exit. */
async function shell(script: string): Promise<string> {
  const result = await runWithInput("sh", ["-c", script], Buffer.alloc(0));
  assert.equal(result.code, 0, result.stderr);
  return result.stdout;
}

describe("packTrees round trips", () => {
  let workspace = "";
  let source = "";
  let expected: Map<string, SnapshotEntry>;

  before(async () => {
    workspace = await makeTempDir("pack-roundtrip");
    source = join(workspace, "source");
    await makeHardNamesTree(source);
    expected = await snapshotTree(source);
    expected.delete("skipped-fifo");
  });

  after(async () => {
    await rm(workspace, { recursive: true, force: true });
  });

  for (const [label, command] of [
    ["GNU tar", ["tar"]],
    ["busybox tar", ["/bin/busybox", "tar"]],
  ] as const) {
    it(`extracts byte for byte with ${label}: long, deep, unicode and newline names, boundary sizes, empty dirs, modes and mtimes`, async () => {
      const dest = join(workspace, `out-${label.replace(/\W/g, "-")}`);
      await mkdir(dest);
      const { stream, done } = packTrees([{ hostDir: source, archivePrefix: "work" }]);
      const result = await runWithInput(command[0], [...command.slice(1), "-xf", "-", "-C", dest], stream);
      assert.equal(result.code, 0, result.stderr);
      await done;
      const extracted = await snapshotTree(join(dest, "work"));
      assert.deepEqual(extracted, expected);
      assert.equal(extracted.get("modes/private.txt")?.mode, 0o600);
      assert.equal(extracted.get("modes/private-dir")?.mode, 0o700);
      assert.equal(extracted.get("five-mib.bin")?.mtimeSeconds, FILE_MTIME.getTime() / 1000);
      assert.equal(extracted.get("link-long-target")?.target, LONG_TARGET);
      assert.equal(extracted.get("nested-empty/a/b")?.kind, "directory");
    });
  }

  it("is read by tar-stream's extract as the same tree, members in depth-first sorted order", async () => {
    const { archive } = await packToBuffer([{ hostDir: source, archivePrefix: "work" }]);
    const members = await readWithTarStream(archive);
    assert.deepEqual(snapshotFromMembers(members, "work"), expected);
    const names = members.map(({ header }) => header.name.slice("work/".length).replace(/\/$/, ""));
    assert.deepEqual(names, depthFirstSorted([...expected.keys()]));
    assert.ok(members.every(({ header }) => header.uid === 0 && header.gid === 0 && header.uname === "" && header.gname === ""));
  });

  it("reports archiveBytes equal to the length of the stream, end-of-archive blocks included", async () => {
    const { archive, stats } = await packToBuffer([{ hostDir: source, archivePrefix: "work" }]);
    assert.equal(stats.archiveBytes, archive.length);
    assert.equal(archive.length % 512, 0);
    assert.ok(archive.subarray(archive.length - 1024).every((byte) => byte === 0), "ends with two zero blocks");
  });

  it("counts members and name newlines per root so that find | wc -l on the extracted roots matches", async () => {
    const second = join(workspace, "second-root");
    await mkdir(join(second, "x\ny\nz"), { recursive: true });
    await writeFile(join(second, "x\ny\nz", "two\nnewlines"), "");
    await writeFile(join(second, "plain"), "");
    const roots = [
      { hostDir: source, archivePrefix: "work" },
      { hostDir: second, archivePrefix: "steps/abc" },
      { hostDir: join(source, "empty-dir"), archivePrefix: "knotless" },
    ];
    const dest = join(workspace, "out-find");
    await mkdir(join(dest, "knotless"), { recursive: true });
    const { stream, done } = packTrees(roots);
    const result = await runWithInput("tar", ["-xf", "-", "-C", dest], stream);
    assert.equal(result.code, 0, result.stderr);
    const stats = await done;

    assert.deepEqual(stats.entriesByRoot, [expected.size, 3, 0]);
    assert.deepEqual(stats.nameNewlinesByRoot, [4, 2 + 3, 0], "work: line\\nbreak, dir\\nwith newline and its file, link\\nnewline; steps: x\\ny\\nz and its file");
    for (const [index, prefix] of ["work", "steps/abc", "knotless"].entries()) {
      const lines = Number((await shell(`find '${join(dest, prefix)}' | wc -l`)).trim());
      assert.equal(lines, (stats.entriesByRoot[index] ?? 0) + (stats.nameNewlinesByRoot[index] ?? 0) + 1, prefix);
    }
    assert.equal(stats.files + stats.dirs + stats.symlinks, stats.entriesByRoot.reduce((sum, count) => sum + count, 0));
    assert.equal(stats.skipped.length, 1);
  });

  it("counts a PAX header as part of its member, not as a member of its own", async () => {
    const { archive, stats } = await packToBuffer([{ hostDir: source, archivePrefix: "work" }]);
    const members = await readWithTarStream(archive);
    assert.equal(stats.entriesByRoot[0], members.length);
  });
});

describe("packTrees trailer", () => {
  let workspace = "";
  let source = "";

  before(async () => {
    workspace = await makeTempDir("pack-trailer");
    source = join(workspace, "source");
    await mkdir(join(source, "sub"), { recursive: true });
    await writeFile(join(source, "a.txt"), "a\n");
    await writeFile(join(source, "sub/b.bin"), randomBytes(70_000));
  });

  after(async () => {
    await rm(workspace, { recursive: true, force: true });
  });

  it("writes the trailer last, as a 0644 file owned by 0:0 with mtime now, at the offset it was told", async () => {
    const calls: PackStats[] = [];
    const trailer = (stats: PackStats): PackTrailer => {
      calls.push(stats);
      return { path: "knotless/manifest.json", content: Buffer.from(JSON.stringify({ entries: stats.entriesByRoot, offset: stats.archiveBytes })) };
    };
    const before = Math.floor(Date.now() / 1000);
    const { archive, stats } = await packToBuffer([{ hostDir: source, archivePrefix: "work" }], { trailer });
    const after = Math.ceil(Date.now() / 1000);

    assert.equal(calls.length, 1);
    const [seen] = calls;
    assert.ok(seen);
    assert.deepEqual(seen.entriesByRoot, [3]);
    assert.equal(seen.files, 2);
    assert.equal(archive.subarray(seen.archiveBytes, seen.archiveBytes + 100).toString("latin1").replace(/\0+$/, ""), "knotless/manifest.json");

    const members = await readWithTarStream(archive);
    const last = members.at(-1);
    assert.equal(last?.header.name, "knotless/manifest.json");
    assert.equal(last?.header.type, "file");
    assert.equal(last?.header.mode, 0o644);
    assert.equal(last?.header.uid, 0);
    assert.equal(last?.header.gid, 0);
    const mtime = (last?.header.mtime.getTime() ?? 0) / 1000;
    assert.ok(mtime >= before && mtime <= after, `mtime ${mtime} is now`);
    assert.deepEqual(JSON.parse(last?.content.toString() ?? ""), { entries: [3], offset: seen.archiveBytes });

    assert.deepEqual(stats.entriesByRoot, [3], "the trailer is not a member of a root");
    assert.equal(stats.files, 2);
    assert.equal(stats.archiveBytes, archive.length);
    assert.equal(archive.length, seen.archiveBytes + 512 + 512 + 1024);
  });

  it("points archiveBytes at the PAX header when the trailer's path needs one, and GNU tar extracts it", async () => {
    const path = `knotless/${"m".repeat(150)}`;
    const content = randomBytes(3000);
    let offset = -1;
    const { archive } = await packToBuffer([{ hostDir: source, archivePrefix: "work" }], {
      trailer: (stats) => {
        offset = stats.archiveBytes;
        return { path, content };
      },
    });
    assert.equal(archive[offset + 156], "x".charCodeAt(0));
    const dest = join(workspace, "out-trailer");
    await mkdir(dest);
    const result = await runWithInput("tar", ["-xf", "-", "-C", dest], archive);
    assert.equal(result.code, 0, result.stderr);
    const extracted = await snapshotTree(dest);
    assert.equal(extracted.get(path)?.sha256, sha256Of(content));
    assert.equal(extracted.get(path)?.mode, 0o644);
  });

  it("rejects done with a PackError when the trailer's path climbs out with ..", async () => {
    const { stream, done } = packTrees([{ hostDir: source, archivePrefix: "work" }], { trailer: () => ({ path: "../escape", content: Buffer.alloc(1) }) });
    await assert.rejects(collectStream(stream), /trailer path/);
    await assert.rejects(done, (error: unknown) => error instanceof PackError && /trailer path must be a relative path/.test(error.message));
  });
});

/** Relative paths in the walk's order: depth first, names sorted at each level (by UTF-16 code units). */
function depthFirstSorted(paths: readonly string[]): string[] {
  const split = paths.map((path) => path.split("/"));
  split.sort((left, right) => {
    for (let index = 0; index < Math.min(left.length, right.length); index += 1) {
      const a = left[index] ?? "";
      const b = right[index] ?? "";
      if (a !== b) return a < b ? -1 : 1;
    }
    return left.length - right.length;
  });
  return split.map((parts) => parts.join("/"));
}
