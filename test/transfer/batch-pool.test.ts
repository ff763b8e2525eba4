// Tests BatchPool: a batch comes back into use only once it is retired and every chunk lent from it is back.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { BatchPool } from "../../src/transfer/batch-pool.js";

const BATCH = 8192;
const BLOCK = 512;

/** Takes a batch, lends the chunks [0, 1024) and [1024, 2048) of it, and retires it, as the packer would. */
function lendTwoChunksAndRetire(pool: BatchPool): { batch: Buffer; first: Buffer; second: Buffer } {
  const batch = pool.take(0, BLOCK);
  const first = batch.subarray(0, 1024);
  const second = batch.subarray(1024, 2048);
  pool.lend(first);
  pool.lend(second);
  pool.retire(batch);
  return { batch, first, second };
}

describe("BatchPool", () => {
  it("hands out again a retired batch whose chunks have all come back", () => {
    const pool = new BatchPool(BATCH, 4);
    const { batch, first, second } = lendTwoChunksAndRetire(pool);
    pool.giveBack(first);
    pool.giveBack(second);
    assert.equal(pool.take(0, BLOCK).buffer, batch.buffer);
  });

  it("does not reuse a batch while one of its chunks is still out", () => {
    const pool = new BatchPool(BATCH, 4);
    const { batch, first } = lendTwoChunksAndRetire(pool);
    pool.giveBack(first);
    assert.notEqual(pool.take(0, BLOCK).buffer, batch.buffer);
  });

  it("does not reuse a batch the packer has not retired, even with every chunk back", () => {
    const pool = new BatchPool(BATCH, 4);
    const batch = pool.take(0, BLOCK);
    const chunk = batch.subarray(0, 1024);
    pool.lend(chunk);
    pool.giveBack(chunk);
    assert.notEqual(pool.take(0, BLOCK).buffer, batch.buffer);
  });

  it("counts a chunk given back twice once", () => {
    const pool = new BatchPool(BATCH, 4);
    const { batch, first } = lendTwoChunksAndRetire(pool);
    pool.giveBack(first);
    pool.giveBack(first);
    assert.notEqual(pool.take(0, BLOCK).buffer, batch.buffer, "the second chunk is still out");
  });

  it("ignores chunks that are not from its batches", () => {
    const pool = new BatchPool(BATCH, 4);
    const stranger = Buffer.alloc(BATCH);
    pool.lend(stranger);
    pool.retire(stranger);
    pool.giveBack(stranger);
    assert.notEqual(pool.take(0, BLOCK).buffer, stranger.buffer);
  });

  it("rounds a larger request up to whole blocks and never keeps such a batch", () => {
    const pool = new BatchPool(BATCH, 4);
    const large = pool.take(BATCH + 1, BLOCK);
    assert.equal(large.length, BATCH + BLOCK);
    pool.lend(large);
    pool.retire(large);
    pool.giveBack(large);
    const next = pool.take(0, BLOCK);
    assert.equal(next.length, BATCH);
    assert.notEqual(next.buffer, large.buffer);
  });

  it("keeps at most the given number of free batches", () => {
    const pool = new BatchPool(BATCH, 2);
    const batches = [pool.take(0, BLOCK), pool.take(0, BLOCK), pool.take(0, BLOCK)];
    for (const batch of batches) {
      pool.lend(batch);
      pool.retire(batch);
      pool.giveBack(batch);
    }
    const reused = [pool.take(0, BLOCK), pool.take(0, BLOCK), pool.take(0, BLOCK)].filter((taken) =>
      batches.some((batch) => batch.buffer === taken.buffer),
    );
    assert.equal(reused.length, 2);
  });
});
