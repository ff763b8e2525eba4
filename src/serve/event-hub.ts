// Wakes the clients following /events when a status event is committed: they read the events themselves from the store, from their own cursor.
export class EventHub {
  readonly #waiters = new Set<() => void>();

  /** Called after each event is committed to the store. */
  publish(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }

  /** Resolves at the next publish, or once `signal` aborts. */
  whenPublished(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
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

  get size(): number {
    return this.#waiters.size;
  }
}
