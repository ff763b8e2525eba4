// The zstd frame walk: where complete blocks end, and the frames an untrusted archive may not hold.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { CacheArchiveError } from "../../src/cache/archive-checker.js";
import { sniffCompression } from "../../src/transfer/sniff-compression.js";
import { ZstdFrameScanner } from "../../src/cache/zstd-frames.js";

const HAVE_ZSTD = spawnSync("zstd", ["--version"]).status === 0;
const zstd = (input: Buffer, ...flags: string[]): Buffer =>
  spawnSync("zstd", ["-q", "-c", ...flags], { input, maxBuffer: 64 * 1024 * 1024 }).stdout;

function walk(bytes: Buffer, piece: number): ZstdFrameScanner {
  const scanner = new ZstdFrameScanner();
  for (let at = 0; at < bytes.length; at += piece) scanner.push(bytes.subarray(at, at + piece));
  return scanner;
}

describe("telling a cache archive's compression from its first bytes", () => {
  it("says gzip for 1f 8b and zstd for 28 b5 2f fd, whatever follows", () => {
    assert.equal(sniffCompression(Buffer.from("1f8b0800", "hex")), "gzip");
    assert.equal(sniffCompression(Buffer.from("28b52ffd04", "hex")), "zstd");
  });

  it("waits while the bytes could still be either, and decides at the end", () => {
    assert.equal(sniffCompression(Buffer.alloc(0)), "short");
    assert.equal(sniffCompression(Buffer.from("1f", "hex")), "short");
    assert.equal(sniffCompression(Buffer.from("28b52f", "hex")), "short");
    assert.equal(sniffCompression(Buffer.from("28b52f", "hex"), true), undefined);
    assert.equal(sniffCompression(Buffer.from("1f8b", "hex"), true), "gzip");
  });

  it("refuses anything else: a plain tar, xz, bzip2, a skippable zstd frame first", () => {
    for (const hex of ["776f726b2f", "fd377a585a00", "425a6839", "502a4d18", "28b52ffe"])
      assert.equal(sniffCompression(Buffer.from(hex, "hex")), undefined, hex);
  });
});

describe("walking a zstd stream's frames", { skip: HAVE_ZSTD ? false : "no zstd on this host" }, () => {
  it("ends between frames at the stream's end, in pieces of any size, several frames included", () => {
    const one = zstd(randomBytes(400_000), "-1");
    const two = Buffer.concat([one, zstd(Buffer.from("x".repeat(1000)), "-3", "--no-check")]);
    for (const piece of [1, 3, 1000, 1 << 20]) {
      const scanner = walk(two, piece);
      assert.doesNotThrow(() => scanner.finish());
      assert.equal(scanner.safeBytes, two.length, `pieces of ${piece}`);
    }
  });

  it("counts as safe only the input up to the last complete block", () => {
    const frame = zstd(randomBytes(300_000), "-1"); // incompressible: raw blocks of 128 KiB
    const scanner = walk(frame.subarray(0, 200_000), 4096);
    // The header (6 bytes here: magic, descriptor, window) and one block of 3 + 131072.
    assert.ok(scanner.safeBytes < 200_000 && scanner.safeBytes >= 131_075, String(scanner.safeBytes));
    assert.throws(() => scanner.finish(), /truncated \(it ends inside a frame/);
  });

  it("refuses a reserved block type, a block over 128 KiB, a dictionary, and no frame at all", () => {
    const header = Buffer.from("28b52ffd0050", "hex"); // no checksum, window 1 MiB
    const block = (value: number): Buffer => Buffer.from([value & 0xff, (value >> 8) & 0xff, (value >> 16) & 0xff]);
    assert.throws(() => walk(Buffer.concat([header, block((1 << 3) | (3 << 1) | 1)]), 100), /reserved type/);
    assert.throws(
      () => walk(Buffer.concat([header, block(((128 * 1024 + 1) << 3) | (2 << 1))]), 100),
      /block of 131073 bytes/,
    );
    assert.throws(
      () => walk(Buffer.concat([header, block(((1 << 20) << 3) | (1 << 1))]), 100),
      /block of 1048576 bytes/,
      "an RLE block regenerating 1 MiB",
    );
    assert.throws(() => walk(Buffer.from("28b52ffd0150aa", "hex"), 100), /names a dictionary/);
    assert.throws(
      () => new ZstdFrameScanner().finish(),
      (error: unknown) => error instanceof CacheArchiveError && /holds no frame/.test(error.message),
    );
  });
});
