// How much of a live run's log.ndjson is written, for the clients that follow it: they read the file up to there and wait here for more, until the end.
/**
 * Holds no lines: the run's NDJSON sink tells it the file's length each time more whole lines are in it, and each
 * follower reads the file itself from its own offset. Once ended, the file is complete (closed) and followers read
 * it to its end.
 */
export class LogFeed {
  #length = 0;
  #ended = false;
  readonly #waiters = new Set<() => void>();

  /** Bytes of whole lines in the file so far. */
  get length(): number {
    return this.#length;
  }

  get ended(): boolean {
    return this.#ended;
  }

  written(length: number): void {
    if (this.#ended || length <= this.#length) return;
    this.#length = length;
    this.#wake();
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#wake();
  }

  /** Resolves at the next write or the end, or once `signal` aborts. */
  whenChanged(signal: AbortSignal): Promise<void> {
    if (this.#ended || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.#waiters.delete(done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.#waiters.add(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  #wake(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }
}
