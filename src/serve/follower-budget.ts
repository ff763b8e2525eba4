// The bounds on what the service buffers for its stream followers (/logs and /events), shared by all of them, with the counts /metrics shows.

/** `serve --follower-stall-timeout`, `--follower-buffer`, `--all-followers-buffer`. */
export interface FollowerSettings {
  /** A follower with bytes waiting that takes none of them for this long is dropped. */
  readonly stallTimeoutMs: number;
  /** Most bytes buffered for one follower (sent, not yet taken by its connection). */
  readonly maxBufferedBytes: number;
  /** Most bytes buffered for all followers together: past it, every follower waits (none is dropped for it). */
  readonly maxTotalBufferedBytes: number;
}

export const DEFAULT_FOLLOWER_SETTINGS: FollowerSettings = {
  stallTimeoutMs: 30_000,
  maxBufferedBytes: 256 * 1024,
  maxTotalBufferedBytes: 64 * 1024 * 1024,
};

export type StreamKind = "logs" | "events";
export type StreamTransport = "ndjson" | "websocket";

/** Followers now, and dropped so far, by stream and transport: "logs/ndjson" → n. */
export interface FollowerCounts {
  readonly followers: ReadonlyMap<string, number>;
  readonly dropped: ReadonlyMap<string, number>;
  readonly bufferedBytes: number;
}

export class FollowerBudget {
  readonly settings: FollowerSettings;
  #buffered = 0;
  readonly #followers = new Map<string, number>();
  readonly #dropped = new Map<string, number>();
  readonly #waiters = new Set<() => void>();

  constructor(settings: FollowerSettings) {
    this.settings = settings;
  }

  /** Room left under the shared bound. */
  get room(): number {
    return this.settings.maxTotalBufferedBytes - this.#buffered;
  }

  counts(): FollowerCounts {
    return { followers: new Map(this.#followers), dropped: new Map(this.#dropped), bufferedBytes: this.#buffered };
  }

  join(key: string): void {
    this.#followers.set(key, (this.#followers.get(key) ?? 0) + 1);
  }

  leave(key: string): void {
    this.#followers.set(key, (this.#followers.get(key) ?? 1) - 1);
  }

  countDropped(key: string): void {
    this.#dropped.set(key, (this.#dropped.get(key) ?? 0) + 1);
  }

  reserve(bytes: number): void {
    this.#buffered += bytes;
  }

  /** Gives bytes back (taken by a connection, or a follower gone) and wakes every follower waiting for room. */
  release(bytes: number): void {
    if (bytes === 0) return;
    this.#buffered -= bytes;
    for (const waiter of [...this.#waiters]) waiter();
  }

  /** Resolves at the next release anywhere, or once `signal` aborts. */
  whenReleased(signal: AbortSignal): Promise<void> {
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
}
