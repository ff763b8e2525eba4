// Decoding zstd with the host's own zstd: the same bytes as fzstd, the same bounds first, checksums verified, and the child kept on a short leash.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable, type Duplex } from "node:stream";
import { pipeline } from "node:stream/promises";
import { describe, it } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { CacheArchiveError } from "../../src/cache/archive-checker.js";
import { createHostZstdDecompress } from "../../src/cache/host-zstd-decompress.js";
import { createZstdDecompress } from "../../src/cache/zstd-decompress.js";
import { findOnPath } from "../../src/util/find-on-path.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const HOST_ZSTD = findOnPath("zstd", process.env.PATH);
const zstd = (input: Buffer, ...flags: string[]): Buffer => spawnSync("zstd", ["-q", "-c", ...flags], { input, maxBuffer: 256 * 1024 * 1024 }).stdout;

/** Everything `decoder` makes of `input`, fed in pieces of `piece` bytes. */
async function decode(decoder: Duplex, input: Buffer, piece = 64 * 1024): Promise<Buffer> {
  const out: Buffer[] = [];
  const pieces = Array.from({ length: Math.ceil(input.length / piece) }, (_, i) => input.subarray(i * piece, (i + 1) * piece));
  await pipeline(Readable.from(pieces), decoder, new Writable({ write: (chunk: Buffer, _encoding, callback) => (out.push(chunk), callback()) }));
  return Buffer.concat(out);
}

/** A stand-in for zstd: a shell script (no PATH in its environment, so absolute commands) at a fresh path. */
function fakeZstd(body: string): { path: string; dir: string } {
  const dir = makeTestTempDir("fake-zstd-");
  const path = join(dir, "zstd");
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return { path, dir };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("decoding zstd with the host's zstd", { skip: HOST_ZSTD === undefined ? "no zstd on this host" : false }, () => {
  const host = HOST_ZSTD!;

  it("gives the same bytes as fzstd, several frames and levels included, whatever the piece size", async () => {
    const data = Buffer.concat([randomBytes(300_000), Buffer.from("compressible ".repeat(50_000))]);
    const archive = Buffer.concat([zstd(data, "-1"), zstd(data, "-19", "--no-check")]);
    const expected = await decode(createZstdDecompress(), archive);
    assert.deepEqual(expected, Buffer.concat([data, data]));
    for (const piece of [1, 1000, 1 << 20]) assert.deepEqual(await decode(createHostZstdDecompress(host), archive, piece), expected, `pieces of ${piece}`);
  });

  it("refuses a frame declaring a window over 128 MiB before the host's zstd is given a byte of it", async () => {
    const archive = Buffer.from(zstd(Buffer.from("x".repeat(1000)), "-1"));
    archive[5] = 18 << 3; // 256 MiB
    const fake = fakeZstd(`/bin/cat > "${"$"}(/usr/bin/dirname "$0")/input"`);
    await assert.rejects(decode(createHostZstdDecompress(fake.path), archive), /not valid zstd: a frame declares a window of 268435456 bytes/);
    await delay(200);
    assert.equal(existsSync(join(fake.dir, "input")) ? readFileSync(join(fake.dir, "input")).length : 0, 0, "zstd was given the refused frame");
  });

  it("refuses a stream cut inside a frame in the frame walk's words", async () => {
    const archive = zstd(randomBytes(100_000), "-1");
    await assert.rejects(decode(createHostZstdDecompress(host), archive.subarray(0, archive.length - 3)), /not valid zstd: the stream is truncated/);
  });

  it("refuses a wrong content checksum, which fzstd lets by", async () => {
    const archive = Buffer.from(zstd(Buffer.from("checksummed ".repeat(10_000)), "-1"));
    archive[archive.length - 1] = archive.at(-1)! ^ 0xff;
    assert.equal((await decode(createZstdDecompress(), archive)).length, 120_000, "fzstd decoded it whole");
    await assert.rejects(decode(createHostZstdDecompress(host), archive), (error: unknown) => error instanceof CacheArchiveError && /^cache archive is not valid zstd: Decoding error \(\d+\) : Restored data doesn't match checksum$/.test(error.message));
  });

  it("fails a garbled block with zstd's own words, as a CacheArchiveError", async () => {
    // One block (50 kB of input): from byte 20 on, only its content and the checksum are garbled, never a header.
    const archive = Buffer.from(zstd(Buffer.from("garble me, please ".repeat(3000)), "-1"));
    for (let at = 20; at < archive.length - 4; at += 1) archive[at] = 0xff;
    await assert.rejects(decode(createHostZstdDecompress(host), archive), (error: unknown) => error instanceof CacheArchiveError && /^cache archive is not valid zstd: Decoding error \(\d+\) : \w/.test(error.message));
  });

  it("fails, naming the binary, when the host's zstd cannot run", async () => {
    const missing = join(makeTestTempDir("no-zstd-"), "zstd");
    await assert.rejects(decode(createHostZstdDecompress(missing), zstd(Buffer.from("x"), "-1")), (error: unknown) => error instanceof CacheArchiveError && error.message.includes(`the host's zstd (${missing}) could not run: `));
  });

  it("gives the child an empty environment: none of the runner's variables reach it", async () => {
    const fake = fakeZstd(`/usr/bin/env > "${"$"}(/usr/bin/dirname "$0")/env"; exec ${host} "$@"`);
    process.env.KNOTLESS_TEST_SECRET_MARKER = "s3cr3t-marker";
    try {
      assert.equal((await decode(createHostZstdDecompress(fake.path), zstd(Buffer.from("hello"), "-1"))).toString(), "hello");
    } finally {
      delete process.env.KNOTLESS_TEST_SECRET_MARKER;
    }
    const env = readFileSync(join(fake.dir, "env"), "utf8");
    assert.doesNotMatch(env, /s3cr3t-marker|KNOTLESS_TEST_SECRET_MARKER|^PATH=/m);
  });

  it("kills the host's zstd when the stream is destroyed", async () => {
    const fake = fakeZstd(`echo $$ > "${"$"}(/usr/bin/dirname "$0")/pid"; exec /bin/sleep 60`);
    const decoder = createHostZstdDecompress(fake.path);
    decoder.on("error", () => undefined);
    decoder.write(zstd(Buffer.from("x"), "-1"));
    const pidFile = join(fake.dir, "pid");
    for (let waited = 0; !existsSync(pidFile) || readFileSync(pidFile, "utf8").trim() === ""; waited += 20) {
      assert.ok(waited < 10_000, "the fake zstd never started");
      await delay(20);
    }
    const pid = Number(readFileSync(pidFile, "utf8").trim());
    assert.ok(alive(pid));
    decoder.destroy();
    for (let waited = 0; alive(pid); waited += 20) {
      assert.ok(waited < 5000, `zstd (pid ${pid}) still runs 5 s after the stream was destroyed`);
      await delay(20);
    }
  });

  it("reads the child only as fast as its reader: 256 MiB of output wait in the pipe, not in memory", async () => {
    const archive = zstd(Buffer.alloc(256 * 1024 * 1024), "-1");
    const decoder = createHostZstdDecompress(host);
    decoder.end(archive);
    await delay(500);
    assert.ok(decoder.readableLength <= 2 * 1024 * 1024, `${decoder.readableLength} bytes buffered unread`);
    let total = 0;
    for await (const chunk of decoder) total += (chunk as Buffer).length;
    assert.equal(total, 256 * 1024 * 1024);
  });
});
