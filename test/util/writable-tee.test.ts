import assert from "node:assert/strict";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { describe, it } from "node:test";
import { setImmediate as tick } from "node:timers/promises";
import { WritableTee } from "../../src/util/writable-tee.js";

/** A sink that keeps what it is given; while `held`, it takes no chunk until released. */
function sink(highWaterMark: number): { stream: Writable; chunks: Buffer[]; release: () => void; hold: () => void } {
  const chunks: Buffer[] = [];
  let held = false;
  let waiting: (() => void) | undefined;
  const stream = new Writable({
    highWaterMark,
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk);
      if (!held) return callback();
      waiting = callback;
    },
  });
  return {
    stream,
    chunks,
    hold: () => void (held = true),
    release: () => {
      held = false;
      const callback = waiting;
      waiting = undefined;
      callback?.();
    },
  };
}

const KiB = 1024;

describe("WritableTee", () => {
  it("copies every chunk into every target in order and finishes once all of them finished", async () => {
    const a = sink(16 * KiB);
    const b = sink(16 * KiB);
    const input = Array.from({ length: 20 }, (_, n) => Buffer.alloc(5000, n));
    await pipeline(Readable.from(input), new WritableTee([a.stream, b.stream]));
    assert.deepEqual(Buffer.concat(a.chunks), Buffer.concat(input));
    assert.deepEqual(Buffer.concat(b.chunks), Buffer.concat(input));
    assert.equal(a.stream.writableFinished && b.stream.writableFinished, true);
  });

  it("lets a fast target go on while a slow one fills its own buffer, and waits once that buffer is full", async () => {
    const fast = sink(16 * KiB);
    const slow = sink(64 * KiB);
    slow.hold();
    const tee = new WritableTee([fast.stream, slow.stream]);
    const done = pipeline(Readable.from(Array.from({ length: 10 }, () => Buffer.alloc(16 * KiB))), tee);
    for (let n = 0; n < 20; n++) await tick();
    // The slow one took one chunk and holds it; its buffer takes three more before write() says it is full.
    assert.equal(fast.chunks.length, 4);
    assert.equal(slow.chunks.length, 1);
    slow.release();
    await done;
    assert.equal(fast.chunks.length, 10);
    assert.equal(slow.chunks.length, 10);
  });

  it("fails with a target's error and destroys the other targets with it", async () => {
    const good = sink(16 * KiB);
    const bad = new Writable({ write: (_chunk, _encoding, callback) => callback(new Error("disk full")) });
    await assert.rejects(pipeline(Readable.from([Buffer.alloc(10), Buffer.alloc(10)]), new WritableTee([good.stream, bad])), /disk full/);
    assert.equal(good.stream.destroyed, true);
  });

  it("fails when a target is closed before its end", async () => {
    const good = sink(16 * KiB);
    const closed = sink(16 * KiB);
    closed.hold();
    const done = pipeline(Readable.from(Array.from({ length: 10 }, () => Buffer.alloc(16 * KiB))), new WritableTee([good.stream, closed.stream]));
    await tick();
    closed.stream.destroy();
    await assert.rejects(done, /closed before its end/);
  });

  it("destroys every target with the error it is destroyed with", async () => {
    const a = sink(16 * KiB);
    const b = sink(16 * KiB);
    const errors: string[] = [];
    a.stream.on("error", (error) => errors.push(error.message));
    b.stream.on("error", (error) => errors.push(error.message));
    const tee = new WritableTee([a.stream, b.stream]);
    tee.on("error", () => undefined);
    tee.destroy(new Error("kubectl died"));
    await tick();
    assert.deepEqual(errors, ["kubectl died", "kubectl died"]);
  });
});
