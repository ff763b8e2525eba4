// Tests packTrees as a stream: backpressure, bounded buffering, batch boundaries and descriptors on early exit.
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { lstat, mkdir, readFile, readdir, rm, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Writable } from "node:stream";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { PackError, PackStoppedError, packTrees } from "../../src/transfer/pack-tree.js";
import { END_OF_ARCHIVE_BYTES, encodeTarHeader, paddedSize } from "../../src/transfer/tar-header-writer.js";
import { collectStream, makeTempDir, runWithInput, snapshotTree } from "./tree-helpers.js";

const MIB = 1024 * 1024;
/** The packer's batch size: no pushed chunk is larger. */
const BATCH_BYTES = MIB;
/** What may sit in the stream's buffer: a batch cut short by a slice, then one full batch. */
const BUFFERED_LIMIT = 2 * BATCH_BYTES;

/** Sizes that put contents and headers across 1 MiB batch boundaries, in archive order. */
const BOUNDARY_FILES: ReadonlyArray<readonly [string, number]> = [
  ["00-fills-the-first-batch-but-two-blocks", MIB - 512 - 1024],
  ["01-one-byte", 1],
  [`02-needs-a-pax-header-${"p".repeat(120)}`, 700],
  ["03-exactly-one-mib", MIB],
  ["04-one-mib-plus-one", MIB + 1],
  ["05-empty", 0],
  ["06-511", 511],
  ["07-512", 512],
  ["08-513", 513],
  ["09-256k-minus-1", 256 * 1024 - 1],
  ["10-256k", 256 * 1024],
  ["11-256k-plus-1", 256 * 1024 + 1],
  ["12-three-mib-and-change", 3 * MIB + 7],
  [`13-another-pax-${"q".repeat(150)}`, MIB - 3000],
  ["14-last", 10],
];

/** Counts this process's open file descriptors. */
function openDescriptors(): number {
  return readdirSync("/proc/self/fd").length;
}

/** Collects a stream's chunks in flowing mode, one per push. */
function collectFlowing(stream: Readable): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("end", () => resolve(chunks));
    stream.on("error", reject);
  });
}

/** Reads a stream in paused mode with small synchronous read() calls, the way some consumers do. */
function readInSmallPieces(stream: Readable, size: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("readable", () => {
      for (
        let chunk: Buffer | null = stream.read(size) as Buffer | null;
        chunk !== null;
        chunk = stream.read(size) as Buffer | null
      )
        chunks.push(chunk);
    });
    stream.on("end", () => resolve(Buffer.concat(chunks)));
    stream.on("error", reject);
  });
}

describe("packTrees as a stream", () => {
  let workspace = "";
  let boundaries = "";
  let large = "";

  before(async () => {
    workspace = await makeTempDir("pack-stream");
    boundaries = join(workspace, "boundaries");
    await mkdir(boundaries);
    for (const [name, size] of BOUNDARY_FILES) await writeFile(join(boundaries, name), randomBytes(size));
    large = join(workspace, "large");
    await mkdir(join(large, "small"), { recursive: true });
    await writeFile(join(large, "big.bin"), randomBytes(16 * MIB));
    for (let index = 0; index < 400; index += 1)
      await writeFile(join(large, "small", `f${String(index).padStart(3, "0")}`), randomBytes(20_000));
  });

  after(async () => {
    await rm(workspace, { recursive: true, force: true });
  });

  it("writes exactly each member's header, content and zero padding, whatever the batch boundaries", async () => {
    const { stream, done } = packTrees([{ hostDir: boundaries, archivePrefix: "work" }]);
    const chunks = await collectFlowing(stream);
    const archive = Buffer.concat(chunks);
    const chunkSizes = chunks.map((chunk) => chunk.length);
    const stats = await done;

    const expected: Buffer[] = [];
    for (const [name, size] of BOUNDARY_FILES) {
      const info = await lstat(join(boundaries, name));
      expected.push(
        encodeTarHeader({
          path: `work/${name}`,
          type: "file",
          mode: info.mode,
          size,
          mtimeSeconds: Math.floor(info.mtimeMs / 1000),
        }),
      );
      expected.push(await readFile(join(boundaries, name)), Buffer.alloc(paddedSize(size) - size));
    }
    expected.push(Buffer.alloc(END_OF_ARCHIVE_BYTES));
    assert.ok(archive.equals(Buffer.concat(expected)), "the archive is the concatenation of the members");
    assert.equal(stats.archiveBytes, archive.length);
    assert.ok(chunkSizes.length > 1);
    assert.ok(Math.max(...chunkSizes) <= BATCH_BYTES, `largest chunk ${Math.max(...chunkSizes)}`);
  });

  it("gives the same bytes to a consumer that gives each chunk back once written, refilling a few batches", async () => {
    const plain = await collectStream(packTrees([{ hostDir: large, archivePrefix: "work" }]).stream);
    const { stream, done, giveBack } = packTrees([{ hostDir: large, archivePrefix: "work" }]);
    const copies: Buffer[] = [];
    const batches = new Set<ArrayBufferLike>();
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        batches.add(chunk.buffer);
        // "Written" a turn later, as a socket's write callback would be; the chunk is given back only then.
        setImmediate(() => {
          copies.push(Buffer.from(chunk));
          giveBack(chunk);
          callback();
        });
      },
    });
    await pipeline(stream, sink);
    const stats = await done;
    const archive = Buffer.concat(copies);
    assert.ok(archive.equals(plain), "the archive is unchanged by the reuse");
    assert.ok(stats.archiveBytes > 10 * BATCH_BYTES);
    assert.ok(
      batches.size <= 6,
      `${batches.size} distinct batches for ${Math.ceil(stats.archiveBytes / BATCH_BYTES)} MiB`,
    );
  });

  it("produces the same bytes for a consumer that reads synchronously in small pieces, which GNU tar extracts", async () => {
    const fast = await collectStream(packTrees([{ hostDir: boundaries, archivePrefix: "work" }]).stream);
    const { stream, done } = packTrees([{ hostDir: boundaries, archivePrefix: "work" }]);
    const slow = await readInSmallPieces(stream, 1000);
    await done;
    assert.ok(slow.equals(fast));

    const dest = join(workspace, "out-boundaries");
    await mkdir(dest);
    const result = await runWithInput("tar", ["-xf", "-", "-C", dest], slow);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(await snapshotTree(join(dest, "work")), await snapshotTree(boundaries));
  });

  it("stops packing while nobody reads, with at most two batches buffered", async () => {
    const { stream, done } = packTrees([{ hostDir: large, archivePrefix: "work" }]);
    let settled = false;
    void done.then(
      () => (settled = true),
      () => (settled = true),
    );
    await new Promise((resolve) => stream.once("readable", resolve));
    const first = stream.read() as Buffer;
    assert.ok(first.length > 0);
    await sleep(200);
    assert.ok(stream.readableLength <= BUFFERED_LIMIT, `buffered ${stream.readableLength} bytes`);
    assert.equal(settled, false);
    stream.destroy();
    await assert.rejects(
      done,
      PackStoppedError,
      "a consumer that goes away is told apart from a host file that cannot be packed",
    );
  });

  it("keeps buffering bounded under a slow consumer and finishes only once the consumer has nearly everything", async () => {
    const { stream, done } = packTrees([{ hostDir: large, archivePrefix: "work" }]);
    let consumed = 0;
    let largestBuffered = 0;
    let consumedWhenDone = -1;
    void done.then(() => (consumedWhenDone = consumed));
    const slowSink = new Writable({
      highWaterMark: 1,
      write(chunk: Buffer, _encoding, callback) {
        consumed += chunk.length;
        largestBuffered = Math.max(largestBuffered, stream.readableLength);
        setTimeout(callback, 2);
      },
    });
    await pipeline(stream, slowSink);
    const stats = await done;
    assert.equal(consumed, stats.archiveBytes);
    assert.ok(largestBuffered <= BUFFERED_LIMIT, `buffered up to ${largestBuffered} bytes`);
    assert.ok(
      consumedWhenDone >= stats.archiveBytes - 2 * BUFFERED_LIMIT,
      `done came when ${consumedWhenDone} of ${stats.archiveBytes} bytes were consumed`,
    );
  });

  it("closes the file it was reading when the consumer destroys the stream in the middle of it", async () => {
    const before = openDescriptors();
    const { stream, done } = packTrees([{ hostDir: large, archivePrefix: "work" }]);
    await new Promise((resolve) => stream.once("readable", resolve));
    stream.read();
    assert.ok(openDescriptors() > before, "big.bin is open, being read in batches");
    stream.destroy();
    await assert.rejects(done, PackError);
    assert.equal(openDescriptors(), before);
  });

  it("closes the file that shrank when it rejects done", async () => {
    const dir = join(workspace, "shrinking");
    await mkdir(dir);
    await writeFile(join(dir, "shrinks.bin"), randomBytes(8 * MIB));
    const before = openDescriptors();
    const { stream, done } = packTrees([{ hostDir: dir, archivePrefix: "work" }]);
    await new Promise((resolve) => stream.once("readable", resolve));
    stream.read();
    await truncate(join(dir, "shrinks.bin"), 10);
    const streamError = new Promise((resolve) => stream.once("error", resolve));
    stream.resume();
    assert.match(String(await streamError), /shrinks\.bin/);
    await assert.rejects(done, /shrinks\.bin: it shrank while being read/);
    assert.equal(openDescriptors(), before);
    assert.deepEqual(await readdir(dir), ["shrinks.bin"]);
  });
});
