// Hands the packer's batch buffers out again once the consumer has written every chunk cut from them.
//
// Why: a fresh 1 MiB batch per MiB packed left up to ~64 MiB of written-out batches waiting for V8's next
// garbage collection (it runs after that much external memory), each new batch on fresh pages: ~21,000 extra
// page faults and 70-90 ms more system time per 128 MiB uploaded, and ~60 MiB more RSS (bench/RESULTS.md).

interface BatchState {
  /** Chunks of the batch handed to the consumer and not given back yet. */
  lent: number;
  /** True once the packer has moved on to another batch. */
  retired: boolean;
}

/**
 * Batches of `batchBytes` (larger ones, for a header that does not fit, are never kept). The state is keyed
 * weakly by each batch's ArrayBuffer, so a consumer that never gives chunks back leaks nothing: its batches
 * are collected as before. A chunk given back twice counts once.
 */
export class BatchPool {
  private readonly free: Buffer[] = [];
  private readonly states = new WeakMap<ArrayBufferLike, BatchState>();
  private readonly returned = new WeakSet<Buffer>();

  constructor(
    private readonly batchBytes: number,
    private readonly keep: number,
  ) {}

  /** A batch of at least `minBytes` (rounded up to `blockBytes`), reused when one is free. */
  take(minBytes: number, blockBytes: number): Buffer {
    const size = Math.max(this.batchBytes, Math.ceil(minBytes / blockBytes) * blockBytes);
    const reused = size === this.batchBytes ? this.free.pop() : undefined;
    const batch = reused ?? Buffer.allocUnsafe(size);
    if (size === this.batchBytes) this.states.set(batch.buffer, { lent: 0, retired: false });
    return batch;
  }

  /** `chunk`, a view of a batch from take(), goes to the consumer. */
  lend(chunk: Buffer): void {
    const state = this.states.get(chunk.buffer);
    if (state) state.lent += 1;
  }

  /** The packer will not write into `batch` again. */
  retire(batch: Buffer): void {
    const state = this.states.get(batch.buffer);
    if (!state) return;
    state.retired = true;
    this.release(batch.buffer, state);
  }

  /** The consumer is done with `chunk` (its bytes are written out): its batch may be reused once all are back. */
  giveBack(chunk: Buffer): void {
    const state = this.states.get(chunk.buffer);
    if (!state || this.returned.has(chunk)) return;
    this.returned.add(chunk);
    state.lent -= 1;
    this.release(chunk.buffer, state);
  }

  private release(buffer: ArrayBufferLike, state: BatchState): void {
    if (!state.retired || state.lent > 0) return;
    this.states.delete(buffer);
    if (this.free.length < this.keep) this.free.push(Buffer.from(buffer as ArrayBuffer, 0, this.batchBytes));
  }
}
