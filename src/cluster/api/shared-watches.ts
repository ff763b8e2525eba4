// One list-watch per collection and selector, serving every subscriber of the process (every run's cancel and pod waits).
import type { ApiClient } from "./api-client.js";
import { runListWatch, type WatchChange, type WatchTarget, type WatchedObject } from "./list-watch.js";

export interface Subscriber<T extends WatchedObject> {
  /** Aborting it ends this subscription (resolves); the shared watch stops when its last subscriber leaves. */
  readonly signal: AbortSignal;
  /** Each change, in order; a subscriber that joins a running watch first gets every known object as ADDED. */
  readonly onChange: (change: WatchChange<T>) => void;
  /** Called once the watch has listed (at once when it already had): what it knows is complete. */
  readonly onSynced?: (known: ReadonlyMap<string, T>) => void;
}

export interface SharedWatchOptions {
  readonly inactivityMs?: number;
  readonly timeoutSeconds?: number;
  readonly maxFailures?: number;
  readonly backoffMs?: number;
}

interface Entry {
  readonly controller: AbortController;
  readonly subscribers: Set<Member>;
  readonly known: Map<string, WatchedObject>;
  synced: boolean;
}

interface Member {
  readonly subscriber: Subscriber<WatchedObject>;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Watches shared by key (path and selectors). `subscribe` resolves when its signal is aborted and rejects with the
 * watch's final error (a refusal, or transient failures past the budget) or with what its own `onChange` threw; one
 * subscriber's exception never reaches another. Nothing runs until the first subscription.
 */
export class SharedWatches {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly client: ApiClient,
    private readonly options: SharedWatchOptions = {},
  ) {}

  /** How many list-watches run now (for tests and doctor). */
  get size(): number {
    return this.entries.size;
  }

  subscribe<T extends WatchedObject>(target: WatchTarget, subscriber: Subscriber<T>): Promise<void> {
    if (subscriber.signal.aborted) return Promise.resolve();
    const key = `${target.path}?labelSelector=${target.labelSelector ?? ""}&fieldSelector=${target.fieldSelector ?? ""}`;
    let entry = this.entries.get(key);
    const fresh = !entry;
    if (!entry) {
      entry = { controller: new AbortController(), subscribers: new Set(), known: new Map(), synced: false };
      this.entries.set(key, entry);
    }
    const current = entry;
    return new Promise<void>((resolve, reject) => {
      const member: Member = { subscriber: subscriber as unknown as Subscriber<WatchedObject>, resolve, reject };
      const leave = (): void => {
        current.subscribers.delete(member);
        resolve();
        if (current.subscribers.size === 0) this.stop(key, current);
      };
      subscriber.signal.addEventListener("abort", leave, { once: true });
      current.subscribers.add(member);
      if (!fresh) {
        try {
          for (const object of current.known.values()) subscriber.onChange({ type: "ADDED", object: object as T });
          if (current.synced) subscriber.onSynced?.(current.known as unknown as ReadonlyMap<string, T>);
        } catch (error) {
          this.drop(key, current, member, error);
        }
        return;
      }
      runListWatch<WatchedObject>(this.client, target, {
        ...this.options,
        signal: current.controller.signal,
        onChange: (change) => {
          const name = `${change.object.metadata?.namespace ?? ""}/${change.object.metadata?.name ?? ""}`;
          if (change.type === "DELETED") current.known.delete(name);
          else current.known.set(name, change.object);
          for (const m of [...current.subscribers]) {
            try {
              m.subscriber.onChange(change);
            } catch (error) {
              this.drop(key, current, m, error);
            }
          }
        },
        onSynced: () => {
          current.synced = true;
          for (const m of [...current.subscribers]) {
            try {
              m.subscriber.onSynced?.(current.known);
            } catch (error) {
              this.drop(key, current, m, error);
            }
          }
        },
      }).then(
        () => this.stop(key, current),
        (error: unknown) => {
          if (this.entries.get(key) === current) this.entries.delete(key);
          for (const m of current.subscribers) m.reject(error);
          current.subscribers.clear();
        },
      );
    });
  }

  /** Stops every watch; their subscribers resolve. */
  stopAll(): void {
    for (const [key, entry] of [...this.entries]) this.stop(key, entry);
  }

  private drop(key: string, entry: Entry, member: Member, error: unknown): void {
    entry.subscribers.delete(member);
    member.reject(error);
    if (entry.subscribers.size === 0) this.stop(key, entry);
  }

  private stop(key: string, entry: Entry): void {
    if (this.entries.get(key) === entry) this.entries.delete(key);
    entry.controller.abort();
    for (const m of entry.subscribers) m.resolve();
    entry.subscribers.clear();
  }
}
