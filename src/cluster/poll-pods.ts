// A watch of pods made of repeated lists, for a transport without a cheap watch (kubectl): the changes between two lists as watch events.
import type { IPod } from "kubernetes-models/v1/Pod";
import { setTimeout as sleep } from "node:timers/promises";
import type { PodWatchOptions } from "./cluster.js";
import { ClusterError, ForbiddenError, UnauthorizedError } from "./errors.js";

/**
 * Lists with `list` on options.pollMs until the signal is aborted (resolves), delivering what changed since the last
 * list: ADDED, MODIFIED (the object differs), DELETED; onSynced after each list that succeeded. A ClusterError other
 * than a refusal goes to onRetry and the next list; a refusal, or anything that is no ClusterError, rejects.
 */
export async function pollPods(list: (signal: AbortSignal | undefined) => Promise<IPod[]>, options: PodWatchOptions): Promise<void> {
  const known = new Map<string, { pod: IPod; text: string }>();
  const schedule = options.pollMs && options.pollMs.length > 0 ? options.pollMs : [1000];
  for (let poll = 0; !options.signal?.aborted; poll++) {
    let pods: IPod[] | undefined;
    try {
      pods = await list(options.signal);
    } catch (error) {
      if (options.signal?.aborted) return;
      if (!(error instanceof ClusterError) || error instanceof ForbiddenError || error instanceof UnauthorizedError) throw error;
      options.onRetry?.(error);
    }
    if (options.signal?.aborted) return;
    if (pods) {
      const now = new Map(pods.map((pod) => [pod.metadata?.name ?? "", { pod, text: JSON.stringify(pod) }]));
      for (const [name, before] of known) if (!now.has(name)) options.onEvent({ type: "DELETED", object: before.pod });
      for (const [name, after] of now) {
        const before = known.get(name);
        if (!before) options.onEvent({ type: "ADDED", object: after.pod });
        else if (before.text !== after.text) options.onEvent({ type: "MODIFIED", object: after.pod });
      }
      known.clear();
      for (const [name, entry] of now) known.set(name, entry);
      options.onSynced?.();
    }
    try {
      await sleep(schedule[Math.min(poll, schedule.length - 1)]!, undefined, options.signal ? { signal: options.signal } : {});
    } catch {
      return; // aborted
    }
  }
}
