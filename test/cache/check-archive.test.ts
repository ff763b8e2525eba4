// The streaming check of cache archives: hostile, broken and truncated archives refused, normal ones accepted.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync, linkSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { CacheArchiveError, createArchiveCheck, type ArchiveCheckReport, type SavedArchiveReport } from "../../src/cache/check-archive.js";
import { makeTestTempDir } from "../support/temp-dir.js";
import { encodeTarHeader } from "../../src/transfer/tar-header-writer.js";
import { createArchiveGate } from "../../src/cache/archive-gate.js";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { buildArchive, type ArchiveEntry } from "../transfer/tree-helpers.js";
import { findOnPath } from "../../src/util/find-on-path.js";

function hasBusybox(): boolean {
  return spawnSync("busybox", ["tar", "--help"]).status === 0;
}

const LARGE_CHILD = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "check-large-archive.js");
const ROOTS = ["/work/node_modules", "/root/.npm"];

/** The host's zstd, when it has one. */
const HOST_ZSTD = findOnPath("zstd", process.env.PATH);

/** Writes `archive` into a fresh check in pieces of `piece` bytes, then ends it; with `hostZstd`, zstd is decoded by that binary. */
async function checkWith(archive: Buffer, piece = 1000, roots: readonly string[] = ROOTS, hostZstd?: string): Promise<SavedArchiveReport> {
  const checker = createArchiveCheck({ roots, ...(hostZstd === undefined ? {} : { hostZstd }) });
  for (let at = 0; at < archive.length; at += piece) checker.stream.write(archive.subarray(at, at + piece));
  checker.stream.end();
  return checker.done;
}

const check = (archive: Buffer, piece?: number, roots?: readonly string[]): Promise<SavedArchiveReport> => checkWith(archive, piece, roots);

const file = (name: string, content = "x"): ArchiveEntry => ({ header: { name, type: "file", mode: 0o644 }, content });
const dir = (name: string): ArchiveEntry => ({ header: { name, type: "directory", mode: 0o755 } });
const symlink = (name: string, linkname: string): ArchiveEntry => ({ header: { name, type: "symlink", linkname } });
const hardLink = (name: string, linkname: string): ArchiveEntry => ({ header: { name, type: "link", linkname } });

async function assertRefused(entries: readonly ArchiveEntry[], pattern: RegExp, member?: string): Promise<void> {
  const archive = gzipSync(await buildArchive(entries));
  await assert.rejects(check(archive), (error: unknown) => {
    assert.ok(error instanceof CacheArchiveError, `not a CacheArchiveError: ${String(error)}`);
    assert.match(error.message, pattern);
    if (member !== undefined) assert.equal(error.member, member);
    return true;
  });
}

describe("checking a cache archive", () => {
  it("accepts what GNU tar packs from / with the cache's paths, hard links and relative symlinks included", async () => {
    const root = makeTestTempDir("knotless-cache-tree-");
    mkdirSync(join(root, "work/node_modules/.bin"), { recursive: true });
    mkdirSync(join(root, "work/node_modules/typescript/bin"), { recursive: true });
    mkdirSync(join(root, "root/.npm/_cacache"), { recursive: true });
    writeFileSync(join(root, "work/node_modules/typescript/bin/tsc"), "#!/usr/bin/env node\n");
    symlinkSync("../typescript/bin/tsc", join(root, "work/node_modules/.bin/tsc"));
    writeFileSync(join(root, "root/.npm/_cacache/index"), "a".repeat(100_000));
    linkSync(join(root, "root/.npm/_cacache/index"), join(root, "root/.npm/_cacache/index-link"));
    mkdirSync(join(root, `work/node_modules/${"long-name/".repeat(20)}`), { recursive: true });
    writeFileSync(join(root, `work/node_modules/${"long-name/".repeat(20)}f`), "deep");
    // GNU tar on the host, busybox tar as in the local cluster's pods: both use long-name headers past 100 bytes.
    const packers = [["tar"], ...(hasBusybox() ? [["busybox", "tar"]] : [])];
    for (const [binary, ...first] of packers) {
      const archive = execFileSync(binary!, [...first, "-C", root, "-czf", "-", "work/node_modules", "root/.npm"], { maxBuffer: 64 * 1024 * 1024 });
      const report = await check(archive, 777);
      assert.equal(report.entries, 31, binary);
      assert.equal(report.bytes, 100_000 + 20 + 4, binary);
      assert.equal(report.archiveBytes, archive.length);
    }
  });

  it("accepts a leading ./ in names, fed a byte at a time, and says the archive was gzip", async () => {
    const archive = gzipSync(await buildArchive([dir("./work/node_modules/"), file("./work/node_modules/a", "hello")]));
    assert.deepEqual(await check(archive, 1), { entries: 2, bytes: 5, archiveBytes: archive.length, compression: "gzip" });
  });

  it("refuses a plain tar archive: the first bytes are neither gzip's nor zstd's", async () => {
    const archive = await buildArchive([file("work/node_modules/a", "hello")]);
    await assert.rejects(check(archive), /cache archive is neither gzip nor zstd: it starts with 776f726b/);
  });

  for (const decoder of [
    { name: "fzstd, in this process", hostZstd: undefined },
    { name: "the host's zstd", hostZstd: HOST_ZSTD },
  ]) {
    describe(`a zstd archive, decoded by ${decoder.name}`, { skip: HOST_ZSTD !== undefined ? false : "no zstd on this host" }, () => {
      const check = (archive: Buffer, piece?: number): Promise<SavedArchiveReport> => checkWith(archive, piece, ROOTS, decoder.hostZstd);
      const zstd = (tar: Buffer, ...flags: string[]): Buffer => execFileSync("zstd", ["-q", "-c", ...flags], { input: tar, maxBuffer: 64 * 1024 * 1024 });

      it("is decoded whatever the piece size, and the check says zstd", async () => {
        const tar = await buildArchive([dir("work/node_modules/"), file("work/node_modules/a", randomBytes(300_000).toString("hex")), file("work/node_modules/b", "b".repeat(200_000))]);
        for (const flags of [["-1"], ["-19"], ["-1", "-T2", "--no-check"]]) {
          const archive = zstd(tar, ...flags);
          for (const piece of [1, 7, 4096, 1 << 20]) {
            assert.deepEqual(await check(archive, piece), { entries: 3, bytes: 800_000, archiveBytes: archive.length, compression: "zstd" }, `${flags.join(" ")} in pieces of ${piece}`);
          }
        }
      });

      it("refuses a hostile member inside it, naming the member", async () => {
        const archive = zstd(await buildArchive([file("work/node_modules/a"), symlink("work/node_modules/up", "../../etc")]), "-1");
        await assert.rejects(check(archive, 100), (error: unknown) => error instanceof CacheArchiveError && error.member === "work/node_modules/up" && /unsafe|outside|points/.test(error.message));
      });

      it("refuses a truncated stream, even when its tar would have ended", async () => {
        const archive = zstd(await buildArchive([file("work/node_modules/a", "z".repeat(50_000))]), "-1");
        for (const cut of [archive.length - 1, archive.length - 4, 20, 5]) {
          await assert.rejects(check(archive.subarray(0, cut)), /not valid zstd: .*(truncated|unexpected EOF)/, `cut at ${cut}`);
        }
      });

      it("refuses a frame declaring a window over 128 MiB before decoding it", async () => {
        const archive = Buffer.from(zstd(await buildArchive([file("work/node_modules/a")]), "-1"));
        assert.equal(archive[4]! & 0x20, 0, "zstd wrote a single-segment frame; this test patches the window descriptor");
        archive[5] = 18 << 3; // 2^28 bytes: 256 MiB
        await assert.rejects(check(archive), /not valid zstd: a frame declares a window of 268435456 bytes, over the 134217728/);
        // Single-segment: the window is the content size, 2^32 here.
        const single = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0xe0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0]);
        await assert.rejects(check(single), /a frame declares a window of 4294967296 bytes/);
      });

      it("decodes a bomb (32 KiB of RLE blocks that make 1 GiB) in bounded memory, in the check (and, with fzstd, the gate)", { timeout: 120_000 }, async () => {
        const blockHeader = (size: number, type: number, last: boolean): Buffer => {
          const value = (size << 3) | (type << 1) | (last ? 1 : 0);
          return Buffer.from([value & 0xff, (value >> 8) & 0xff, (value >> 16) & 0xff]);
        };
        const blocks = 8192;
        const member = encodeTarHeader({ path: "work/node_modules/bomb", type: "file", mode: 0o644, size: blocks * 128 * 1024, mtimeSeconds: 0 });
        const rle = Buffer.concat([blockHeader(128 * 1024, 1, false), Buffer.from("a")]);
        const archive = Buffer.concat([
          Buffer.from("28b52ffd0038", "hex"), // no checksum, a 128 KiB window
          blockHeader(member.length, 0, false),
          member,
          ...Array.from({ length: blocks }, () => rle),
          blockHeader(1024, 0, true),
          Buffer.alloc(1024),
        ]);
        // The process's peak RSS (a synchronous decode would never let a timer sample it).
        const before = Math.max(process.memoryUsage.rss(), process.resourceUsage().maxRSS * 1024);
        try {
          const report = await check(archive, archive.length);
          assert.deepEqual({ entries: report.entries, bytes: report.bytes }, { entries: 1, bytes: blocks * 128 * 1024 });
          if (decoder.hostZstd === undefined) {
            // The gate reads its decoder on 'readable': a decoder that pushed a whole chunk's output would hold 1 GiB.
            const gate = createArchiveGate("zstd", { roots: ROOTS });
            await pipeline(Readable.from([archive]), gate.stream, new Writable({ write: (_chunk, _encoding, callback) => callback() }));
            assert.equal((await gate.done).bytes, blocks * 128 * 1024);
          }
        } finally {
          global.gc?.();
        }
        const peak = process.resourceUsage().maxRSS * 1024;
        assert.ok(peak - before < 150 * 1024 * 1024, `RSS grew by ${Math.round((peak - before) / 1048576)} MiB decoding ${archive.length} bytes to 1 GiB`);
      });

      it("refuses garbage after its frame and a garbled block", async () => {
        const archive = zstd(await buildArchive([file("work/node_modules/a", "q".repeat(10_000))]), "-1");
        await assert.rejects(check(Buffer.concat([archive, Buffer.from("garbage!")])), /not valid zstd: data after a frame is not a zstd frame/);
        const garbled = Buffer.from(archive);
        for (let at = 12; at < garbled.length - 8; at += 1) garbled[at] = 0xff;
        await assert.rejects(check(garbled), CacheArchiveError);
      });
    });
  }

  it("refuses absolute names, .. components and members outside the cache's paths, naming the member", async () => {
    await assertRefused([file("/work/node_modules/a")], /member "\/work\/node_modules\/a" is refused: absolute path/, "/work/node_modules/a");
    await assertRefused([file("work/node_modules/../../etc/passwd")], /is refused: path contains a \.\. component/);
    await assertRefused([file("work/node_modules/a"), file("etc/passwd")], /"etc\/passwd" is refused: outside the cache's paths \(\/work\/node_modules, \/root\/\.npm\)/, "etc/passwd");
    await assertRefused([file("work/node_modules2/a")], /outside the cache's paths/);
    await assertRefused([dir("work/")], /"work\/" is refused: outside the cache's paths/);
  });

  it("refuses devices and fifos", async () => {
    await assertRefused([{ header: { name: "work/node_modules/tty", type: "character-device", devmajor: 4, devminor: 1 } }], /"work\/node_modules\/tty" is refused: character device is not allowed/);
    await assertRefused([{ header: { name: "work/node_modules/sda", type: "block-device", devmajor: 8, devminor: 0 } }], /block device is not allowed/);
    await assertRefused([{ header: { name: "work/node_modules/pipe", type: "fifo" } }], /fifo is not allowed/);
  });

  it("refuses symlinks that are absolute, leave the cache path, or climb after a name", async () => {
    await assertRefused([symlink("work/node_modules/etc", "/etc")], /"work\/node_modules\/etc" is refused: symlink target "\/etc" is absolute/);
    await assertRefused([symlink("work/node_modules/.bin/up", "../../x")], /symlink target "\.\.\/\.\.\/x" resolves outside the cache path \/work\/node_modules/);
    await assertRefused([symlink("work/node_modules/m", "x/../..")], /has \.\. after a name/);
    await assertRefused([symlink("work/node_modules", "elsewhere")], /resolves outside the cache path \/work\/node_modules/);
  });

  it("refuses a member written through, or replacing, a symlink the archive made earlier", async () => {
    await assertRefused([symlink("work/node_modules/s", "."), file("work/node_modules/s/x")], /"work\/node_modules\/s\/x" is refused: is written through the symlink "work\/node_modules\/s"/);
    await assertRefused([symlink("work/node_modules/s", "a"), file("work/node_modules/s")], /replaces the symlink "work\/node_modules\/s"/);
  });

  it("refuses hard links to names outside the cache's paths or with ..", async () => {
    await assertRefused([hardLink("work/node_modules/shadow", "etc/shadow")], /"work\/node_modules\/shadow" is refused: hard link to "etc\/shadow" outside the cache's paths/);
    await assertRefused([hardLink("work/node_modules/up", "work/node_modules/../../etc/shadow")], /hard link to .*: path contains a \.\. component/);
    await assertRefused([hardLink("work/node_modules/abs", "/etc/shadow")], /hard link to "\/etc\/shadow": absolute path/);
    await assertRefused([symlink("work/node_modules/s", "."), hardLink("work/node_modules/h", "work/node_modules/s/a")], /through a symlink earlier in the archive/);
  });

  it("refuses oversized extended headers and names longer than PATH_MAX", async () => {
    await assertRefused([{ header: { name: "work/node_modules/a", type: "file", pax: { comment: "x".repeat(1_100_000) } }, content: "a" }], /not a valid tar archive: .*pax-header header of \d+ bytes \(at most 1048576 accepted\)/);
    await assertRefused([file(`work/node_modules/${"d/".repeat(2100)}f`)], /path is longer than 4096 bytes/);
    await assertRefused([file(`work/node_modules/${"n".repeat(256)}`)], /a path component is longer than 255 bytes/);
  });

  it("refuses an archive cut inside a member, one without its end, and a truncated or garbled gzip", async () => {
    const tar = await buildArchive([file("work/node_modules/a", "z".repeat(5000))]);
    await assert.rejects(check(gzipSync(tar.subarray(0, 2000))), /cache archive is truncated after 1 entries: it ends inside the content of "work\/node_modules\/a"/);
    await assert.rejects(check(gzipSync(tar.subarray(0, 512 + 5120))), /truncated after 1 entries: it ends without an end-of-archive block/);
    const gzip = gzipSync(tar);
    await assert.rejects(check(gzip.subarray(0, gzip.length - 30)), (error: unknown) => error instanceof CacheArchiveError && /not valid gzip: unexpected end of file/.test(error.message));
    const garbled = Buffer.from(gzip);
    garbled[3] = 0xe0; // reserved flag bits
    await assert.rejects(check(garbled), /not valid gzip/);
    await assert.rejects(check(Buffer.alloc(0)), /neither gzip nor zstd: the archive is empty/);
  });

  it("rejects as soon as a member is refused, and takes and drops the rest without erroring or blocking", async () => {
    const checker = createArchiveCheck({ roots: ROOTS });
    let rejected = false;
    checker.done.catch(() => (rejected = true));
    checker.stream.write(gzipSync(await buildArchive([file("etc/passwd")])));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(rejected, true, "done did not reject before the archive's end");
    for (let index = 0; index < 100; index += 1) checker.stream.write(Buffer.alloc(1024 * 1024));
    await new Promise<void>((resolve, reject) => checker.stream.on("error", reject).end(resolve));
    await assert.rejects(checker.done, /"etc\/passwd" is refused/);
  });

  it("does not stall a gzip tee after a refusal, even while gunzip was holding writes back", async () => {
    const checker = createArchiveCheck({ roots: ROOTS });
    const archive = gzipSync(Buffer.concat([await buildArchive([file("etc/passwd")]), randomBytes(8 * 1024 * 1024)]), { level: 0 });
    let accepted = 0;
    for (let at = 0; at < archive.length; at += 256 * 1024) {
      const piece = archive.subarray(at, at + 256 * 1024);
      if (!checker.stream.write(piece)) await new Promise((resolve) => checker.stream.once("drain", resolve));
      accepted += piece.length;
    }
    await new Promise<void>((resolve, reject) => checker.stream.on("error", reject).end(resolve));
    assert.equal(accepted, archive.length);
    await assert.rejects(checker.done, /"etc\/passwd" is refused/);
  });

  it("never buffers the archive: 512 MiB through gzip and 1 GiB through zstd are checked in a small, constant memory", { timeout: 120_000, skip: HOST_ZSTD !== undefined ? false : "no zstd on this host" }, () => {
    for (const [compression, megabytes] of [["gzip", 512], ["zstd", 1024]] as const) {
      const run = spawnSync(process.execPath, [LARGE_CHILD, compression, String(megabytes)], { encoding: "utf8" });
      assert.equal(run.status, 0, run.stderr);
      const result = JSON.parse(run.stdout) as ArchiveCheckReport & { peakRss: number };
      assert.equal(result.entries, megabytes / 8);
      assert.equal(result.bytes, megabytes * 1024 * 1024);
      assert.ok(result.peakRss < 200 * 1024 * 1024, `${compression}: peak RSS ${Math.round(result.peakRss / 1048576)} MiB for ${megabytes} MiB of archive`);
    }
  });
});
