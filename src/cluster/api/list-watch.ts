// List, then watch from the list's resourceVersion: resumes after a break, relists on 410 Gone, follows bookmarks.
import { ClusterError, CutStreamError, isRetryable } from "../errors.js";
import { ExpiredError, mapStatusError } from "./api-errors.js";
import type { ApiClient } from "./api-client.js";

/** The fields of an object a watch reads. */
export interface WatchedObject {
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly resourceVersion?: string;
  };
}

export interface WatchChange<T extends WatchedObject> {
  readonly type: "ADDED" | "MODIFIED" | "DELETED";
  readonly object: T;
}

/** Which objects: a collection path (`/apis/batch/v1/namespaces/ci/jobs`) and its selectors. */
export interface WatchTarget {
  readonly path: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** For errors: `jobs.batch`, `pods`. */
  readonly resource: string;
}

export interface ListWatchOptions<T extends WatchedObject> {
  readonly signal: AbortSignal;
  /** Every change, in order; after a relist, what changed while the watch was away (DELETED for what is gone). */
  readonly onChange: (change: WatchChange<T>) => void;
  /** Called after each list is delivered: the cache is complete from here on. */
  readonly onSynced?: () => void;
  /** Without a byte (an event or a bookmark) for this long the watch is opened again (default 5 min). */
  readonly inactivityMs?: number;
  /** The server ends each watch request after this (default 5 min); the watch then resumes. */
  readonly timeoutSeconds?: number;
  /** Consecutive failures without progress before giving up with the last error (default 6). */
  readonly maxFailures?: number;
  /** The first wait after a failure, doubled up to 5 s (default 250 ms). */
  readonly backoffMs?: number;
}

/**
 * Lists the target, delivers its objects as ADDED, then watches from the list's resourceVersion with
 * `allowWatchBookmarks`, until the signal is aborted (resolves). A watch that ends or breaks is opened again from the
 * last resourceVersion seen (an event's or a bookmark's); 410 Gone relists and delivers the difference. Refusals
 * (403, 401, 404) reject at once; transient failures reject after `maxFailures` in a row without progress.
 */
export async function runListWatch<T extends WatchedObject>(
  client: ApiClient,
  target: WatchTarget,
  options: ListWatchOptions<T>,
): Promise<void> {
  const known = new Map<string, T>();
  const keyOf = (o: T): string => `${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;
  let resourceVersion: string | undefined;
  let failures = 0;
  const maxFailures = options.maxFailures ?? 6;
  const selectors = { labelSelector: target.labelSelector, fieldSelector: target.fieldSelector };
  const aborted = (): boolean => options.signal.aborted;

  const relist = async (): Promise<void> => {
    const list = (await client.request("GET", target.path, {
      query: selectors,
      signal: options.signal,
      verb: "list",
      resource: target.resource,
    })) as {
      metadata?: { resourceVersion?: string };
      items?: T[];
    };
    const seen = new Set<string>();
    for (const item of list.items ?? []) {
      const key = keyOf(item);
      seen.add(key);
      const before = known.get(key);
      known.set(key, item);
      if (!before) options.onChange({ type: "ADDED", object: item });
      else if (before.metadata?.resourceVersion !== item.metadata?.resourceVersion)
        options.onChange({ type: "MODIFIED", object: item });
    }
    for (const [key, object] of known) {
      if (seen.has(key)) continue;
      known.delete(key);
      options.onChange({ type: "DELETED", object });
    }
    resourceVersion = list.metadata?.resourceVersion;
    options.onSynced?.();
  };

  const watchOnce = async (): Promise<number> => {
    const body = await client.stream(target.path, {
      query: {
        ...selectors,
        watch: "true",
        allowWatchBookmarks: "true",
        resourceVersion,
        timeoutSeconds: options.timeoutSeconds ?? 300,
      },
      signal: options.signal,
      inactivityMs: options.inactivityMs ?? 300_000,
      verb: "watch",
      resource: target.resource,
    });
    let pending = "";
    let lines = 0;
    for await (const chunk of body) {
      pending += (chunk as Buffer).toString("utf8");
      let newline: number;
      while ((newline = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        if (line) {
          lines += 1;
          handleLine(line);
        }
      }
    }
    return lines;
  };

  const handleLine = (line: string): void => {
    let event: { type?: string; object?: T & { code?: number; kind?: string; message?: string } };
    try {
      event = JSON.parse(line) as typeof event;
    } catch {
      throw new CutStreamError(`the watch of ${target.resource} sent a line that is not JSON`);
    }
    const object = event.object;
    if (event.type === "ERROR") {
      throw mapStatusError(object?.code ?? 500, object, { verb: "watch", resource: target.resource });
    }
    const version = object?.metadata?.resourceVersion;
    if (event.type === "BOOKMARK") {
      if (version) resourceVersion = version;
      failures = 0;
      return;
    }
    if (!object || (event.type !== "ADDED" && event.type !== "MODIFIED" && event.type !== "DELETED")) {
      throw new CutStreamError(`the watch of ${target.resource} sent an event that is not one: ${line.slice(0, 200)}`);
    }
    if (version) resourceVersion = version;
    failures = 0;
    const key = keyOf(object);
    if (event.type === "DELETED") known.delete(key);
    else known.set(key, object);
    options.onChange({ type: event.type, object });
  };

  let needList = true;
  while (!aborted()) {
    try {
      if (needList) {
        await relist();
        needList = false;
      }
      const started = Date.now();
      const lines = await watchOnce();
      // A watch the server ends at once with nothing in it is a failure, or this loop would spin.
      if (lines === 0 && Date.now() - started < 1000)
        throw new CutStreamError(`the watch of ${target.resource} ended at once without an event`);
    } catch (error) {
      if (aborted()) return;
      if (error instanceof ExpiredError) {
        needList = true;
        continue;
      }
      // Refusals are final; a broken or silent stream, a reset connection or a 5xx is worth another watch.
      if (error instanceof ClusterError && !(error instanceof CutStreamError) && !isRetryable(error)) throw error;
      failures += 1;
      if (failures >= maxFailures) throw error;
      const wait = Math.min(5_000, (options.backoffMs ?? 250) * 2 ** (failures - 1));
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        options.signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
  }
}
