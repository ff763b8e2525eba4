// The hostile-archive rules as the restore's gate enforces them: hostile, broken and truncated archives refused, normal ones accepted.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { execFileSync, spawnSync } from "node:child_process";
import { once } from "node:events";
import { linkSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { createArchiveGate } from "../../src/cache/archive-gate.js";
import { CacheArchiveError, type ArchiveCheckReport } from "../../src/cache/archive-checker.js";
import type { CacheCompression } from "../../src/workflow/cache-types.js";
import { encodeTarHeader } from "../../src/transfer/tar-header-writer.js";
import { makeTestTempDir } from "../support/temp-dir.js";
import { buildArchive, type ArchiveEntry } from "../transfer/tree-helpers.js";

function hasBusybox(): boolean {
  return spawnSync("busybox", ["tar", "--help"]).status === 0;
}

const LARGE_CHILD = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "gate-large-archive.js");
const ROOTS = ["/work/node_modules", "/root/.npm"];

/** Whether the host has zstd: only to make the zstd archives (the gate decodes them with fzstd). */
const HAVE_ZSTD = spawnSync("zstd", ["--version"]).status === 0;
/** How long a gate may take over one small test archive before it counts as hung (it must end or error). */
const GATE_TIMEOUT_MS = 20_000;

type GateResult =
  | { readonly report: ArchiveCheckReport; readonly error?: undefined }
  | { readonly report?: undefined; readonly error: unknown };

/**
 * Pipes `archive` through a fresh gate (told the entry's `compression`) in pieces of `piece` bytes, its output
 * dropped; returns the report, or the error the pipeline failed with (which `done` must reject with too).
 */
async function passThroughGate(
  archive: Buffer,
  compression: CacheCompression = "gzip",
  piece = 1000,
  roots: readonly string[] = ROOTS,
): Promise<GateResult> {
  const gate = createArchiveGate(compression, { roots });
  function* pieces(): Generator<Buffer> {
    for (let at = 0; at < archive.length; at += piece) yield archive.subarray(at, at + piece);
  }
  const sink = new Writable({ write: (_chunk, _encoding, callback) => callback() });
  // A gate that neither ends nor errors would leave nothing to keep the event loop up: fail this test, not the file.
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<"hung">((resolve) => (timer = setTimeout(() => resolve("hung"), GATE_TIMEOUT_MS)));
  try {
    const ended = await Promise.race([pipeline(Readable.from(pieces()), gate.stream, sink), hung]);
    if (ended === "hung") {
      gate.stream.destroy();
      assert.fail(
        `the gate neither ended nor errored within ${GATE_TIMEOUT_MS} ms of being fed ${archive.length} bytes`,
      );
    }
  } catch (error) {
    if (error instanceof assert.AssertionError) throw error;
    await assert.rejects(
      gate.done,
      (doneError: unknown) => doneError === error,
      "done did not reject with the stream's error",
    );
    return { error };
  } finally {
    clearTimeout(timer);
  }
  return { report: await gate.done };
}

/** The report of an archive the gate let through whole. */
function accepted(result: GateResult, what?: string): ArchiveCheckReport {
  assert.equal(result.error, undefined, `${what === undefined ? "" : `${what}: `}refused: ${String(result.error)}`);
  return result.report!;
}

/** The gate's CacheArchiveError, its message matching `pattern` (and naming `member`, when given). */
function refused(result: GateResult, pattern: RegExp, member?: string, what?: string): CacheArchiveError {
  const { error } = result;
  const label = what === undefined ? "" : `${what}: `;
  assert.ok(error instanceof CacheArchiveError, `${label}not a CacheArchiveError: ${String(error)}`);
  assert.match(error.message, pattern, what);
  if (member !== undefined) assert.equal(error.member, member, what);
  return error;
}

const file = (name: string, content: string | Buffer = "x"): ArchiveEntry => ({
  header: { name, type: "file", mode: 0o644 },
  content,
});
const dir = (name: string): ArchiveEntry => ({ header: { name, type: "directory", mode: 0o755 } });
const symlink = (name: string, linkname: string): ArchiveEntry => ({ header: { name, type: "symlink", linkname } });
const hardLink = (name: string, linkname: string): ArchiveEntry => ({ header: { name, type: "link", linkname } });

/** Packs `entries` into a gzip archive and asserts the gate refuses it so. */
async function assertRefused(entries: readonly ArchiveEntry[], pattern: RegExp, member?: string): Promise<void> {
  refused(await passThroughGate(gzipSync(await buildArchive(entries))), pattern, member);
}

const zstd = (tar: Buffer, ...flags: string[]): Buffer =>
  execFileSync("zstd", ["-q", "-c", ...flags], { input: tar, maxBuffer: 64 * 1024 * 1024 });

describe("the cache archive gate's rules", () => {
  it("lets through what GNU tar (and busybox tar) packs from / with the cache's paths, hard links and relative symlinks included", async () => {
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
      const archive = execFileSync(binary!, [...first, "-C", root, "-czf", "-", "work/node_modules", "root/.npm"], {
        maxBuffer: 64 * 1024 * 1024,
      });
      const report = accepted(await passThroughGate(archive, "gzip", 777), binary);
      assert.equal(report.entries, 31, binary);
      assert.equal(report.bytes, 100_000 + 20 + 4, binary);
      assert.equal(report.archiveBytes, archive.length, binary);
    }
  });

  it("accepts a leading ./ in names, fed a byte at a time, as the gzip it is and not as zstd", async () => {
    const archive = gzipSync(await buildArchive([dir("./work/node_modules/"), file("./work/node_modules/a", "hello")]));
    assert.deepEqual(accepted(await passThroughGate(archive, "gzip", 1)), {
      entries: 2,
      bytes: 5,
      archiveBytes: archive.length,
    });
    refused(await passThroughGate(archive, "zstd", 1), /^the stored entry says zstd, but its bytes are gzip$/);
  });

  it("refuses a plain tar archive and an empty one: the first bytes are neither gzip's nor zstd's", async () => {
    const archive = await buildArchive([file("work/node_modules/a", "hello")]);
    refused(
      await passThroughGate(archive, "gzip"),
      /^the stored entry says gzip, but it starts with 776f726b, neither gzip \(1f8b\) nor zstd \(28b52ffd\)$/,
    );
    refused(await passThroughGate(Buffer.alloc(0), "gzip"), /^the stored entry says gzip, but the archive is empty$/);
    refused(await passThroughGate(Buffer.alloc(0), "zstd"), /^the stored entry says zstd, but the archive is empty$/);
  });

  describe(
    "a zstd archive, decoded by fzstd",
    { skip: HAVE_ZSTD ? false : "no zstd on this host to make the archives" },
    () => {
      it("is decoded whatever the piece size and zstd's flags, and is zstd, not gzip", async () => {
        const tar = await buildArchive([
          dir("work/node_modules/"),
          // Over two zstd blocks (128 KiB each) of content, yet small once compressed: it is fed a byte at a time below.
          file("work/node_modules/a", randomBytes(10_000).toString("hex")),
          file("work/node_modules/b", "b".repeat(250_000)),
        ]);
        for (const flags of [["-1"], ["-19"], ["-1", "-T2", "--no-check"]]) {
          const archive = zstd(tar, ...flags);
          for (const piece of [1, 7, 4096, 1 << 20]) {
            const what = `${flags.join(" ")} in pieces of ${piece}`;
            assert.deepEqual(
              accepted(await passThroughGate(archive, "zstd", piece), what),
              { entries: 3, bytes: 270_000, archiveBytes: archive.length },
              what,
            );
          }
          refused(
            await passThroughGate(archive, "gzip"),
            /^the stored entry says gzip, but its bytes are zstd$/,
            undefined,
            flags.join(" "),
          );
        }
      });

      it("goes to the end of 16 MiB of incompressible files (raw blocks) fed a megabyte at a time, as the store reads entries", async () => {
        // It once stalled there for good: a decode resumed by a read finished its chunk with the output full, and the
        // write's callback Transform held back was never released.
        const files = Array.from({ length: 64 }, (_, index) =>
          file(`work/node_modules/f${index}`, randomBytes(256 * 1024)),
        );
        const archive = zstd(await buildArchive(files), "-1");
        for (const piece of [1_000_000, 1 << 20]) {
          assert.deepEqual(accepted(await passThroughGate(archive, "zstd", piece), `pieces of ${piece}`), {
            entries: 64,
            bytes: 64 * 256 * 1024,
            archiveBytes: archive.length,
          });
        }
      });

      it("refuses a hostile member inside it, naming the member", async () => {
        const archive = zstd(
          await buildArchive([file("work/node_modules/a"), symlink("work/node_modules/up", "../../etc")]),
          "-1",
        );
        refused(
          await passThroughGate(archive, "zstd", 100),
          /"work\/node_modules\/up" is refused: symlink target "\.\.\/\.\.\/etc" resolves outside the cache path \/work\/node_modules/,
          "work/node_modules/up",
        );
      });

      it("refuses a truncated stream, even when its tar would have ended", async () => {
        const archive = zstd(await buildArchive([file("work/node_modules/a", "z".repeat(50_000))]), "-1");
        for (const cut of [archive.length - 1, archive.length - 4, 20, 5]) {
          refused(
            await passThroughGate(archive.subarray(0, cut), "zstd"),
            /^cache archive is not valid zstd: the stream is truncated \(it ends inside a frame/,
            undefined,
            `cut at ${cut}`,
          );
        }
      });

      it("refuses a frame declaring a window over 128 MiB before decoding it", async () => {
        const archive = Buffer.from(zstd(await buildArchive([file("work/node_modules/a")]), "-1"));
        assert.equal(
          archive[4]! & 0x20,
          0,
          "zstd wrote a single-segment frame; this test patches the window descriptor",
        );
        archive[5] = 18 << 3; // 2^28 bytes: 256 MiB
        refused(
          await passThroughGate(archive, "zstd"),
          /not valid zstd: a frame declares a window of 268435456 bytes, over the 134217728/,
        );
        // Single-segment: the window is the content size, 2^32 here.
        const single = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0xe0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0]);
        refused(await passThroughGate(single, "zstd"), /not valid zstd: a frame declares a window of 4294967296 bytes/);
      });

      it("decodes a bomb (16 KiB of RLE blocks: 512 MiB out) in bounded memory", { timeout: 120_000 }, async () => {
        const blockHeader = (size: number, type: number, last: boolean): Buffer => {
          const value = (size << 3) | (type << 1) | (last ? 1 : 0);
          return Buffer.from([value & 0xff, (value >> 8) & 0xff, (value >> 16) & 0xff]);
        };
        const blocks = 4096;
        const member = encodeTarHeader({
          path: "work/node_modules/bomb",
          type: "file",
          mode: 0o644,
          size: blocks * 128 * 1024,
          mtimeSeconds: 0,
        });
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
          // One chunk: the gate reads its decoder on 'readable', so a decoder that pushed a whole chunk's output would hold 512 MiB.
          const report = accepted(await passThroughGate(archive, "zstd", archive.length));
          assert.deepEqual(report, { entries: 1, bytes: blocks * 128 * 1024, archiveBytes: archive.length });
        } finally {
          global.gc?.();
        }
        const peak = process.resourceUsage().maxRSS * 1024;
        assert.ok(
          peak - before < 150 * 1024 * 1024,
          `RSS grew by ${Math.round((peak - before) / 1048576)} MiB decoding ${archive.length} bytes to 512 MiB`,
        );
      });

      it("refuses garbage after its frame and a garbled block", async () => {
        const archive = zstd(await buildArchive([file("work/node_modules/a", "q".repeat(10_000))]), "-1");
        refused(
          await passThroughGate(Buffer.concat([archive, Buffer.from("garbage!")]), "zstd"),
          /not valid zstd: data after a frame is not a zstd frame/,
        );
        const garbled = Buffer.from(archive);
        for (let at = 12; at < garbled.length - 8; at += 1) garbled[at] = 0xff;
        refused(await passThroughGate(garbled, "zstd"), /^cache archive is not valid zstd: /);
      });
    },
  );

  it("refuses absolute names, .. components and members outside the cache's paths, naming the member", async () => {
    await assertRefused(
      [file("/work/node_modules/a")],
      /member "\/work\/node_modules\/a" is refused: absolute path/,
      "/work/node_modules/a",
    );
    await assertRefused([file("work/node_modules/../../etc/passwd")], /is refused: path contains a \.\. component/);
    await assertRefused(
      [file("work/node_modules/a"), file("etc/passwd")],
      /"etc\/passwd" is refused: outside the cache's paths \(\/work\/node_modules, \/root\/\.npm\)/,
      "etc/passwd",
    );
    await assertRefused([file("work/node_modules2/a")], /outside the cache's paths/);
    await assertRefused([dir("work/")], /"work\/" is refused: outside the cache's paths/);
  });

  it("refuses devices and fifos", async () => {
    await assertRefused(
      [{ header: { name: "work/node_modules/tty", type: "character-device", devmajor: 4, devminor: 1 } }],
      /"work\/node_modules\/tty" is refused: character device is not allowed/,
      "work/node_modules/tty",
    );
    await assertRefused(
      [{ header: { name: "work/node_modules/sda", type: "block-device", devmajor: 8, devminor: 0 } }],
      /block device is not allowed/,
    );
    await assertRefused([{ header: { name: "work/node_modules/pipe", type: "fifo" } }], /fifo is not allowed/);
  });

  it("refuses symlinks that are absolute, leave the cache path, or climb after a name", async () => {
    await assertRefused(
      [symlink("work/node_modules/etc", "/etc")],
      /"work\/node_modules\/etc" is refused: symlink target "\/etc" is absolute/,
      "work/node_modules/etc",
    );
    await assertRefused(
      [symlink("work/node_modules/.bin/up", "../../x")],
      /symlink target "\.\.\/\.\.\/x" resolves outside the cache path \/work\/node_modules/,
    );
    await assertRefused([symlink("work/node_modules/m", "x/../..")], /has \.\. after a name/);
    await assertRefused(
      [symlink("work/node_modules", "elsewhere")],
      /resolves outside the cache path \/work\/node_modules/,
    );
  });

  it("refuses a member written through, or replacing, a symlink the archive made earlier", async () => {
    await assertRefused(
      [symlink("work/node_modules/s", "."), file("work/node_modules/s/x")],
      /"work\/node_modules\/s\/x" is refused: is written through the symlink "work\/node_modules\/s"/,
      "work/node_modules/s/x",
    );
    await assertRefused(
      [symlink("work/node_modules/s", "a"), file("work/node_modules/s")],
      /replaces the symlink "work\/node_modules\/s"/,
    );
  });

  it("refuses hard links to names outside the cache's paths or with ..", async () => {
    await assertRefused(
      [hardLink("work/node_modules/shadow", "etc/shadow")],
      /"work\/node_modules\/shadow" is refused: hard link to "etc\/shadow" outside the cache's paths/,
      "work/node_modules/shadow",
    );
    await assertRefused(
      [hardLink("work/node_modules/up", "work/node_modules/../../etc/shadow")],
      /hard link to .*: path contains a \.\. component/,
    );
    await assertRefused(
      [hardLink("work/node_modules/abs", "/etc/shadow")],
      /hard link to "\/etc\/shadow": absolute path/,
    );
    await assertRefused(
      [symlink("work/node_modules/s", "."), hardLink("work/node_modules/h", "work/node_modules/s/a")],
      /through a symlink earlier in the archive/,
    );
  });

  it("refuses oversized extended headers and names longer than PATH_MAX", async () => {
    await assertRefused(
      [
        {
          header: { name: "work/node_modules/a", type: "file", pax: { comment: "x".repeat(1_100_000) } },
          content: "a",
        },
      ],
      /not a valid tar archive: .*pax-header header of \d+ bytes \(at most 1048576 accepted\)/,
    );
    await assertRefused([file(`work/node_modules/${"d/".repeat(2100)}f`)], /path is longer than 4096 bytes/);
    await assertRefused([file(`work/node_modules/${"n".repeat(256)}`)], /a path component is longer than 255 bytes/);
  });

  it("refuses an archive cut inside a member, one without its end, and a truncated gzip", async () => {
    const tar = await buildArchive([file("work/node_modules/a", "z".repeat(5000))]);
    refused(
      await passThroughGate(gzipSync(tar.subarray(0, 2000))),
      /^cache archive is truncated after 1 entries: it ends inside the content of "work\/node_modules\/a"/,
    );
    refused(
      await passThroughGate(gzipSync(tar.subarray(0, 512 + 5120))),
      /^cache archive is truncated after 1 entries: it ends without an end-of-archive block/,
    );
    const gzip = gzipSync(tar);
    refused(
      await passThroughGate(gzip.subarray(0, gzip.length - 30)),
      /^cache archive is not valid gzip: unexpected end of file/,
    );
  });

  it("refuses a gzip whose header is garbled (reserved flag bits set)", async () => {
    const garbled = gzipSync(await buildArchive([file("work/node_modules/a", "z".repeat(5000))]));
    garbled[3] = 0xe0; // reserved flag bits
    refused(await passThroughGate(garbled), /^cache archive is not valid gzip: /);
  });

  for (const compression of ["gzip", "zstd"] as const) {
    const skip = compression === "zstd" && !HAVE_ZSTD ? "no zstd on this host to make the archive" : false;
    it(
      `errors its stream and rejects done as soon as a refused member in ${compression} is decoded, before the rest of a large archive is fed`,
      { skip, timeout: 30_000 },
      async () => {
        const tar = await buildArchive([
          file("work/node_modules/a", "a"),
          file("etc/passwd", "root::0:0::/root:/bin/sh\n"),
          file("work/node_modules/big", randomBytes(4 * 1024 * 1024)),
        ]);
        const archive = compression === "gzip" ? gzipSync(tar, { level: 1 }) : zstd(tar, "-1");
        const gate = createArchiveGate(compression, { roots: ROOTS });
        gate.stream.resume();
        const errored = once(gate.stream, "error");
        // Fed as a store's file stream gives it, a piece at a time, and no further than the first 1 MiB of some 4.
        const firstBytes = 1024 * 1024;
        let fed = 0;
        while (fed < firstBytes && !gate.stream.destroyed) {
          const piece = archive.subarray(fed, fed + 64 * 1024);
          fed += piece.length;
          await new Promise<void>((resolve) => gate.stream.write(piece, () => resolve()));
        }
        assert.equal(gate.stream.destroyed, true, `the gate was still open after ${fed} of ${archive.length} bytes`);
        assert.equal(gate.stream.writableEnded, false);
        const [streamError] = (await errored) as [unknown];
        assert.ok(streamError instanceof CacheArchiveError, String(streamError));
        assert.match(streamError.message, /^cache archive member "etc\/passwd" is refused: outside the cache's paths/);
        assert.equal(streamError.member, "etc/passwd");
        await assert.rejects(gate.done, (doneError: unknown) => doneError === streamError);
      },
    );
  }

  it(
    "never buffers the archive: 256 MiB of gzip and 256 MiB of zstd go through the gate in a small, constant memory",
    { timeout: 180_000, skip: HAVE_ZSTD ? false : "no zstd on this host" },
    () => {
      // More than the 200 MiB bound below, so a gate that held the decoded archive could not stay under it.
      for (const [compression, megabytes] of [
        ["gzip", 256],
        ["zstd", 256],
      ] as const) {
        const run = spawnSync(process.execPath, [LARGE_CHILD, compression, String(megabytes)], { encoding: "utf8" });
        assert.equal(run.status, 0, run.stderr);
        const result = JSON.parse(run.stdout) as ArchiveCheckReport & { passedBytes: number; peakRss: number };
        assert.equal(result.entries, megabytes / 8, compression);
        assert.equal(result.bytes, megabytes * 1024 * 1024, compression);
        assert.equal(
          result.passedBytes,
          result.archiveBytes,
          `${compression}: the gate let through ${result.passedBytes} of ${result.archiveBytes} bytes`,
        );
        assert.ok(
          result.peakRss < 200 * 1024 * 1024,
          `${compression}: peak RSS ${Math.round(result.peakRss / 1048576)} MiB for ${megabytes} MiB of archive`,
        );
      }
    },
  );
});
