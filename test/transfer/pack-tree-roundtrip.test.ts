// Tests packTrees on hard names and sizes by extracting with GNU tar, busybox tar and tar-stream; and its stats and trailer.
import { randomBytes } from "node:crypto";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { PackError, packTrees } from "../../src/transfer/pack-tree.js";
import type { PackStats, PackTrailer } from "../../src/transfer/pack-tree.js";
import { FILE_MTIME, LONG_TARGET, makeHardNamesTree } from "./hard-names-tree.js";
import {
  collectStream,
  depthFirstSorted,
  makeTempDir,
  readWithTarStream,
  runWithInput,
  sha256Of,
  snapshotFromMembers,
  snapshotTree,
} from "./tree-helpers.js";
import type { SnapshotEntry } from "./tree-helpers.js";

/** Packs `roots` into one buffer; resolves with it and the stats. */
async function packToBuffer(
  roots: Parameters<typeof packTrees>[0],
  options?: Parameters<typeof packTrees>[1],
): Promise<{ archive: Buffer; stats: PackStats }> {
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
    assert.ok(
      members.every(({ header }) => header.uid === 0 && header.gid === 0 && header.uname === "" && header.gname === ""),
    );
  });

  it("reports archiveBytes equal to the length of the stream, end-of-archive blocks included", async () => {
    const { archive, stats } = await packToBuffer([{ hostDir: source, archivePrefix: "work" }]);
    assert.equal(stats.archiveBytes, archive.length);
    assert.equal(archive.length % 512, 0);
    assert.ok(
      archive.subarray(archive.length - 1024).every((byte) => byte === 0),
      "ends with two zero blocks",
    );
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
    assert.deepEqual(
      stats.nameNewlinesByRoot,
      [4, 2 + 3, 0],
      "work: line\\nbreak, dir\\nwith newline and its file, link\\nnewline; steps: x\\ny\\nz and its file",
    );
    for (const [index, prefix] of ["work", "steps/abc", "knotless"].entries()) {
      const lines = Number((await shell(`find '${join(dest, prefix)}' | wc -l`)).trim());
      assert.equal(lines, (stats.entriesByRoot[index] ?? 0) + (stats.nameNewlinesByRoot[index] ?? 0) + 1, prefix);
    }
    assert.equal(
      stats.files + stats.dirs + stats.symlinks,
      stats.entriesByRoot.reduce((sum, count) => sum + count, 0),
    );
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
      return {
        path: "knotless/manifest.json",
        content: Buffer.from(JSON.stringify({ entries: stats.entriesByRoot, offset: stats.archiveBytes })),
      };
    };
    const before = Math.floor(Date.now() / 1000);
    const { archive, stats } = await packToBuffer([{ hostDir: source, archivePrefix: "work" }], { trailer });
    const after = Math.ceil(Date.now() / 1000);

    assert.equal(calls.length, 1);
    const [seen] = calls;
    assert.ok(seen);
    assert.deepEqual(seen.entriesByRoot, [3]);
    assert.equal(seen.files, 2);
    assert.equal(
      archive
        .subarray(seen.archiveBytes, seen.archiveBytes + 100)
        .toString("latin1")
        .replace(/\0+$/, ""),
      "knotless/manifest.json",
    );

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
    const { stream, done } = packTrees([{ hostDir: source, archivePrefix: "work" }], {
      trailer: () => ({ path: "../escape", content: Buffer.alloc(1) }),
    });
    await assert.rejects(collectStream(stream), /trailer path/);
    await assert.rejects(
      done,
      (error: unknown) => error instanceof PackError && /trailer path must be a relative path/.test(error.message),
    );
  });
});
