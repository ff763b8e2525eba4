// A watch made of repeated lists (pods, one object's events), for a transport without a cheap watch (kubectl): the changes between two lists as watch events.
import type { IPod } from "kubernetes-models/v1/Pod";
import { setTimeout as sleep } from "node:timers/promises";
import type { ListedWatchOptions, PodWatchOptions } from "./cluster.js";
import { ClusterError, ForbiddenError, UnauthorizedError } from "./errors.js";

/**
 * Lists with `list` on options.pollMs until the signal is aborted (resolves), delivering what changed since the last
 * list: ADDED, MODIFIED (the object differs), DELETED; onSynced after each list that succeeded. A ClusterError other
 * than a refusal goes to onRetry and the next list; a refusal, or anything that is no ClusterError, rejects.
 */
export function pollPods(
  list: (signal: AbortSignal | undefined) => Promise<IPod[]>,
  options: PodWatchOptions,
): Promise<void> {
  return pollList(list, options);
}

/** Likewise for any listed objects, told apart by their name (pollPods is this for pods). */
export async function pollList<T extends { readonly metadata?: { readonly name?: string } }>(
  list: (signal: AbortSignal | undefined) => Promise<T[]>,
  options: ListedWatchOptions<T>,
): Promise<void> {
  const known = new Map<string, { object: T; text: string }>();
  const schedule = options.pollMs && options.pollMs.length > 0 ? options.pollMs : [1000];
  for (let poll = 0; !options.signal?.aborted; poll++) {
    let objects: T[] | undefined;
    try {
      objects = await list(options.signal);
    } catch (error) {
      if (options.signal?.aborted) return;
      if (!(error instanceof ClusterError) || error instanceof ForbiddenError || error instanceof UnauthorizedError)
        throw error;
      options.onRetry?.(error);
    }
    if (options.signal?.aborted) return;
    if (objects) {
      const now = new Map(
        objects.map((object) => [object.metadata?.name ?? "", { object, text: JSON.stringify(object) }]),
      );
      for (const [name, before] of known)
        if (!now.has(name)) options.onEvent({ type: "DELETED", object: before.object });
      for (const [name, after] of now) {
        const before = known.get(name);
        if (!before) options.onEvent({ type: "ADDED", object: after.object });
        else if (before.text !== after.text) options.onEvent({ type: "MODIFIED", object: after.object });
      }
      known.clear();
      for (const [name, entry] of now) known.set(name, entry);
      options.onSynced?.();
    }
    try {
      await sleep(
        schedule[Math.min(poll, schedule.length - 1)]!,
        undefined,
        options.signal ? { signal: options.signal } : {},
      );
    } catch {
      return; // aborted
    }
  }
}
