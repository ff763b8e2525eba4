// Hands each committed status event to the clients following /events.
import type { StatusEvent } from "./run-store.js";

export class EventHub {
  readonly #subscribers = new Set<(event: StatusEvent) => void>();

  /** Called with each event after it is committed to the store. */
  subscribe(listener: (event: StatusEvent) => void): () => void {
    this.#subscribers.add(listener);
    return () => this.#subscribers.delete(listener);
  }

  publish(event: StatusEvent): void {
    for (const listener of this.#subscribers) listener(event);
  }

  get size(): number {
    return this.#subscribers.size;
  }
}
