// One Writable that copies every chunk into several targets, each buffering up to its own high-water mark.
import { Writable } from "node:stream";

/**
 * Writes each chunk into every target and takes the next once every target is below its high-water mark again (the
 * way pipe() paces a source): a target that is briefly slow (a file write in the thread pool, a child process reading
 * its stdin) holds the source back only once its own buffer is full, so the slowest target sets the pace, not the sum
 * of every target's latency per chunk. Memory stays at the targets' high-water marks plus a chunk each.
 *
 * Ending the tee ends every target and finishes once all of them finished. A target that errors (or is destroyed)
 * destroys the tee with its error; destroying the tee with an error destroys every target with it.
 */
export class WritableTee extends Writable {
  readonly #targets: readonly Writable[];
  /** The drain listeners this tee is waiting on, removed when it is destroyed. */
  readonly #waits = new Map<Writable, () => void>();

  constructor(targets: readonly Writable[]) {
    super();
    this.#targets = targets;
    for (const target of targets) {
      target.on("error", (error: Error) => this.destroy(error));
      target.on("close", () => {
        if (!target.writableFinished && !this.destroyed) this.destroy(new Error("a stream the copy was written into closed before its end"));
      });
    }
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    let waiting = 0;
    for (const target of this.#targets) {
      if (target.write(chunk)) continue;
      if (target.destroyed) return; // its close or error destroys the tee
      waiting++;
      const drained = (): void => {
        this.#waits.delete(target);
        if (--waiting === 0) callback();
      };
      this.#waits.set(target, drained);
      target.once("drain", drained);
    }
    if (waiting === 0) callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    let pending = this.#targets.length;
    if (pending === 0) return callback();
    for (const target of this.#targets) target.end(() => --pending === 0 && callback());
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    for (const [target, drained] of this.#waits) target.off("drain", drained);
    this.#waits.clear();
    if (error) for (const target of this.#targets) if (!target.destroyed) target.destroy(error);
    callback(error);
  }
}
