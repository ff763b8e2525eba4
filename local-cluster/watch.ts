// Serves `?watch=true`: newline-delimited watch events for one resource, filtered by namespace and selectors.

import type { IncomingMessage, ServerResponse } from "node:http";
import { buildFailureStatus } from "./api-error.js";
import { matchesFilter, type ObjectFilter } from "./selectors.js";
import type { ObjectStore } from "./store.js";
import { buildTable } from "./table.js";
import type { KubeObject } from "./types.js";

export interface WatchRequest {
  storeKey: string;
  namespace: string | undefined;
  filter: ObjectFilter;
  resourceVersion: string | null;
  timeoutSeconds: number | undefined;
  asTable: boolean;
  includeObject: string | null;
  /** With allowWatchBookmarks: a BOOKMARK with the store's resourceVersion this often, ms (none for Table watches). */
  bookmarkMs?: number | undefined;
  kind: string;
  apiVersion: string;
}

export function serveWatch(req: IncomingMessage, res: ServerResponse, store: ObjectStore, w: WatchRequest): void {
  res.writeHead(200, {
    "Content-Type": "application/json",
    "Cache-Control": "no-cache, private",
    "Transfer-Encoding": "chunked",
  });
  res.flushHeaders();
  let first = true;
  const write = (type: string, obj: KubeObject): void => {
    let object: unknown = obj;
    if (w.asTable) {
      const table = buildTable(w.storeKey, [obj], w.includeObject, obj.metadata.resourceVersion) as {
        columnDefinitions?: unknown[];
      };
      if (!first) table.columnDefinitions = [];
      object = table;
    }
    first = false;
    res.write(JSON.stringify({ type, object }) + "\n");
  };
  const inScope = (o: KubeObject): boolean => w.namespace === undefined || o.metadata.namespace === w.namespace;
  const matches = (o: KubeObject | undefined): boolean => !!o && inScope(o) && matchesFilter(w.filter, o);

  const unsubscribe = store.subscribe((e) => {
    if (e.resource !== w.storeKey) return;
    const now = matches(e.object);
    if (e.type === "ADDED" && now) write("ADDED", e.object);
    if (e.type === "DELETED" && now) write("DELETED", e.object);
    if (e.type === "MODIFIED") {
      const before = matches(e.previous);
      if (now && before) write("MODIFIED", e.object);
      else if (now) write("ADDED", e.object);
      else if (before) write("DELETED", e.object);
    }
  });

  if (!w.resourceVersion || w.resourceVersion === "0") {
    for (const o of store.list(w.storeKey, w.namespace)) if (matches(o)) write("ADDED", o);
  } else {
    const replay = store.eventsSince(w.storeKey, Number(w.resourceVersion));
    if (replay === "expired") {
      res.write(
        JSON.stringify({
          type: "ERROR",
          object: buildFailureStatus(410, "Expired", `too old resource version: ${w.resourceVersion}`),
        }) + "\n",
      );
      unsubscribe();
      res.end();
      return;
    }
    for (const e of replay) {
      const now = matches(e.object);
      if (e.type === "MODIFIED") {
        const before = matches(e.previous);
        if (now) write(before ? "MODIFIED" : "ADDED", e.object);
        else if (before) write("DELETED", e.object);
      } else if (now) write(e.type, e.object);
    }
  }

  const timer = w.timeoutSeconds ? setTimeout(() => res.end(), w.timeoutSeconds * 1000) : undefined;
  // A bookmark tells a client how far the store is, so that it resumes from there rather than from its last event.
  const bookmarks =
    w.bookmarkMs && !w.asTable
      ? setInterval(() => {
          const metadata = {
            resourceVersion: String(store.currentResourceVersion()),
            annotations: { "k8s.io/initial-events-end": "false" },
          };
          res.write(
            JSON.stringify({ type: "BOOKMARK", object: { kind: w.kind, apiVersion: w.apiVersion, metadata } }) + "\n",
          );
        }, w.bookmarkMs)
      : undefined;
  const close = (): void => {
    unsubscribe();
    if (timer) clearTimeout(timer);
    if (bookmarks) clearInterval(bookmarks);
  };
  req.on("close", close);
  res.on("close", close);
}
