// Tests reading a child's stdout through the pooled socket pair: whole data, buffer reuse, held chunks, backpressure.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { READ_BUFFER_BYTES, ReadBufferPool, openPooledStdout } from "../../../src/cluster/kubectl/pooled-stdout.js";
import type { PooledStdout } from "../../../src/cluster/kubectl/pooled-stdout.js";

const TOTAL_BYTES = 3_000_000;
/** A child printing TOTAL_BYTES of deterministic, position-dependent text. */
const WRITER = `let n = 0; const line = (i) => "line " + i + " of the stream\\n"; let i = 0; let out = "";
while (n < ${TOTAL_BYTES}) { const l = line(i++); out += l; n += l.length; }
process.stdout.write(out.slice(0, ${TOTAL_BYTES}));`;

function expectedOutput(): Buffer {
  let out = "";
  for (let i = 0; out.length < TOTAL_BYTES; i += 1) out += `line ${i} of the stream\n`;
  return Buffer.from(out.slice(0, TOTAL_BYTES));
}

function spawnWriter(pooled: PooledStdout): Promise<number | null> {
  const child = spawn(process.execPath, ["-e", WRITER], { stdio: ["ignore", pooled.childEnd, "inherit"] });
  pooled.closeChildEnd();
  return once(child, "exit").then(([code]) => code as number | null);
}

describe("openPooledStdout", () => {
  it("delivers a child's whole stdout, reusing the buffers given back", async () => {
    const pooled = await openPooledStdout();
    const exited = spawnWriter(pooled);
    const hash = createHash("sha256");
    const buffers = new Set<ArrayBufferLike>();
    let bytes = 0;
    let chunks = 0;
    for await (const chunk of pooled.readable as AsyncIterable<Buffer>) {
      hash.update(chunk);
      bytes += chunk.length;
      chunks += 1;
      buffers.add(chunk.buffer);
      pooled.giveBack(chunk);
    }
    assert.equal(await exited, 0);
    assert.equal(bytes, TOTAL_BYTES);
    assert.equal(hash.digest("hex"), createHash("sha256").update(expectedOutput()).digest("hex"));
    assert.ok(chunks >= TOTAL_BYTES / READ_BUFFER_BYTES, `${chunks} chunks`);
    assert.ok(buffers.size <= 4, `${buffers.size} distinct buffers for ${chunks} chunks given back at once`);
  });

  it("never reads into a buffer whose chunk the consumer still holds", async () => {
    const pooled = await openPooledStdout();
    const exited = spawnWriter(pooled);
    const held: { chunk: Buffer; copy: Buffer }[] = [];
    const all: Buffer[] = [];
    let index = 0;
    for await (const chunk of pooled.readable as AsyncIterable<Buffer>) {
      all.push(Buffer.from(chunk));
      if (index++ % 3 === 0) held.push({ chunk, copy: Buffer.from(chunk) });
      else pooled.giveBack(chunk);
    }
    assert.equal(await exited, 0);
    assert.deepEqual(Buffer.concat(all), expectedOutput());
    assert.ok(held.length > 10);
    for (const { chunk, copy } of held) assert.deepEqual(chunk, copy);
  });

  it("stops reading while the consumer is paused, so the child waits instead of filling memory", async () => {
    const pooled = await openPooledStdout();
    const exited = spawnWriter(pooled);
    pooled.readable.pause();
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Node's Readable keeps reading until its buffer passes its high-water mark (16 KiB), no further.
    assert.ok(
      pooled.readable.readableLength <= 2 * READ_BUFFER_BYTES,
      `${pooled.readable.readableLength} bytes buffered while paused`,
    );
    let bytes = 0;
    for await (const chunk of pooled.readable as AsyncIterable<Buffer>) bytes += chunk.length;
    assert.equal(await exited, 0);
    assert.equal(bytes, TOTAL_BYTES);
  });

  it("ends the readable when the child exits without writing", async () => {
    const pooled = await openPooledStdout();
    const child = spawn("true", [], { stdio: ["ignore", pooled.childEnd, "inherit"] });
    pooled.closeChildEnd();
    const chunks: Buffer[] = [];
    for await (const chunk of pooled.readable as AsyncIterable<Buffer>) chunks.push(chunk);
    assert.deepEqual(chunks, []);
    assert.deepEqual(await once(child, "exit"), [0, null]);
  });

  it("refuses a temp dir too long for a socket path, leaving nothing behind, rather than bind a path cut short", async () => {
    const base = await mkdtemp(join(tmpdir(), "knotless-long-"));
    const longDir = join(base, "d".repeat(100));
    await mkdir(longDir);
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = longDir;
    try {
      await assert.rejects(openPooledStdout(), /longer than 103 bytes/);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
    assert.deepEqual(await readdir(longDir), []);
    assert.deepEqual(await readdir(base), ["d".repeat(100)]);
    await rm(base, { recursive: true });
  });
});

describe("ReadBufferPool", () => {
  it("takes a buffer again only after its chunk is given back, once however often it is", () => {
    const pool = new ReadBufferPool();
    const first = pool.take();
    const chunk = pool.lend(first, 10);
    assert.notEqual(pool.take(), first, "a lent buffer was handed out again");
    pool.giveBack(chunk);
    pool.giveBack(chunk);
    assert.equal(pool.take(), first);
    assert.notEqual(pool.take(), first, "a buffer given back twice was handed out twice");
  });

  it("ignores a chunk that is not one of its own", () => {
    const pool = new ReadBufferPool();
    pool.giveBack(Buffer.alloc(READ_BUFFER_BYTES));
    const taken = pool.take();
    assert.equal(taken.length, READ_BUFFER_BYTES);
    pool.giveBack(taken.subarray(0, 5));
    assert.notEqual(pool.take(), taken, "a buffer never lent was taken back");
  });
});
