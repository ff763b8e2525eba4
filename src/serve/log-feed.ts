// One run's log lines while it is pending or running, for the clients that follow it: every line from the first, then live, then the end.
export interface LogSubscriber {
  readonly line: (text: string) => void;
  readonly end: () => void;
}

/**
 * Lines are kept (as JSON text) until the run ends, so a client that joins late gets them all; after the end the
 * service reads log.ndjson instead. Memory: at most the run's --max-log-bytes of output, plus the runner's lines.
 */
export class LogFeed {
  readonly #lines: string[] = [];
  readonly #subscribers = new Set<LogSubscriber>();
  #ended = false;

  get ended(): boolean {
    return this.#ended;
  }

  push(text: string): void {
    if (this.#ended) return;
    this.#lines.push(text);
    for (const subscriber of this.#subscribers) subscriber.line(text);
  }

  /** Hands every line so far to `subscriber`, then each new one, then the end; returns the unsubscribe. */
  subscribe(subscriber: LogSubscriber): () => void {
    for (const text of this.#lines) subscriber.line(text);
    if (this.#ended) {
      subscriber.end();
      return () => undefined;
    }
    this.#subscribers.add(subscriber);
    return () => this.#subscribers.delete(subscriber);
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const subscriber of this.#subscribers) subscriber.end();
    this.#subscribers.clear();
    this.#lines.length = 0;
  }
}
