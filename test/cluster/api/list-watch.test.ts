// Tests list-watch against a scripted server: resume from the last resourceVersion and bookmark, relist on 410, sharing.
import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import { beforeEach, describe, it } from "node:test";
import { runListWatch, type WatchChange, type WatchTarget } from "../../../src/cluster/api/list-watch.js";
import { SharedWatches } from "../../../src/cluster/api/shared-watches.js";
import { ForbiddenError } from "../../../src/cluster/errors.js";
import { startScriptedApiServer } from "../../support/scripted-api-server.js";
import { until } from "../../support/until.js";

interface Obj {
  metadata: { name: string; namespace: string; resourceVersion: string };
}
type Script = (res: ServerResponse, url: URL) => void;

let lists: Script[] = [];
let watches: Script[] = [];
const requests: URL[] = [];
const openWatches = new Set<ServerResponse>();
const { client } = await startScriptedApiServer((req, res) => {
  const url = new URL(req.url!, "http://x");
  requests.push(url);
  const script = url.searchParams.get("watch") === "true" ? watches.shift() : lists.shift();
  if (!script) return void res.writeHead(500).end("unscripted");
  if (url.searchParams.get("watch") === "true") {
    openWatches.add(res);
    res.on("close", () => openWatches.delete(res));
  }
  script(res, url);
});
beforeEach(() => {
  lists = [];
  watches = [];
  requests.length = 0;
});

const TARGET: WatchTarget = {
  path: "/apis/batch/v1/namespaces/ci/jobs",
  labelSelector: "app=knotless",
  resource: "jobs.batch",
};
const obj = (name: string, rv: string): Obj => ({ metadata: { name, namespace: "ci", resourceVersion: rv } });
const list =
  (rv: string, items: Obj[]): Script =>
  (res) =>
    res.end(JSON.stringify({ kind: "JobList", metadata: { resourceVersion: rv }, items }));
/** A watch that sends `events` and then stays open (or ends, with `end`). */
const watch =
  (events: object[], end = false): Script =>
  (res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.flushHeaders();
    for (const e of events) res.write(JSON.stringify(e) + "\n");
    if (end) res.end();
  };
const summary = (changes: Array<WatchChange<Obj>>): string[] =>
  changes.map((c) => `${c.type} ${c.object.metadata.name}@${c.object.metadata.resourceVersion}`);

describe("list-watch", () => {
  it("lists, then watches with bookmarks and resumes from the last resourceVersion, a bookmark's included", async () => {
    lists = [list("5", [obj("a", "3")])];
    watches = [
      watch(
        [
          { type: "MODIFIED", object: obj("a", "6") },
          { type: "BOOKMARK", object: { metadata: { resourceVersion: "9" } } },
        ],
        true,
      ),
      watch([{ type: "DELETED", object: obj("a", "10") }]),
    ];
    const changes: Array<WatchChange<Obj>> = [];
    const controller = new AbortController();
    const done = runListWatch<Obj>(client, TARGET, { signal: controller.signal, onChange: (c) => changes.push(c) });
    await until(() => changes.length === 3, "three changes");
    controller.abort();
    await done;
    assert.deepEqual(summary(changes), ["ADDED a@3", "MODIFIED a@6", "DELETED a@10"]);
    const watchRequests = requests.filter((u) => u.searchParams.get("watch") === "true");
    assert.deepEqual(
      watchRequests.map((u) => u.searchParams.get("resourceVersion")),
      ["5", "9"],
    );
    assert.ok(
      watchRequests.every(
        (u) =>
          u.searchParams.get("allowWatchBookmarks") === "true" &&
          u.searchParams.get("labelSelector") === "app=knotless",
      ),
    );
    assert.equal(requests.length - watchRequests.length, 1, "one list only");
  });

  it("relists on an in-stream 410 Gone and delivers what changed meanwhile", async () => {
    lists = [list("5", [obj("a", "3"), obj("b", "4")]), list("8", [obj("a", "7"), obj("c", "8")])];
    watches = [
      watch(
        [
          {
            type: "ERROR",
            object: {
              kind: "Status",
              status: "Failure",
              code: 410,
              reason: "Expired",
              message: "too old resource version: 5 (8)",
            },
          },
        ],
        true,
      ),
      watch([]),
    ];
    const changes: Array<WatchChange<Obj>> = [];
    const controller = new AbortController();
    const done = runListWatch<Obj>(client, TARGET, { signal: controller.signal, onChange: (c) => changes.push(c) });
    await until(() => requests.filter((u) => u.searchParams.get("watch") === "true").length === 2, "the second watch");
    controller.abort();
    await done;
    assert.deepEqual(summary(changes), ["ADDED a@3", "ADDED b@4", "MODIFIED a@7", "ADDED c@8", "DELETED b@4"]);
    assert.equal(requests.at(-1)!.searchParams.get("resourceVersion"), "8");
  });

  it("relists on an HTTP 410 Gone answer to the watch", async () => {
    lists = [list("5", []), list("12", [obj("d", "11")])];
    watches = [
      (res) =>
        res
          .writeHead(410, { "content-type": "application/json" })
          .end(JSON.stringify({ kind: "Status", code: 410, reason: "Gone", message: "too old" })),
      watch([]),
    ];
    const changes: Array<WatchChange<Obj>> = [];
    const controller = new AbortController();
    const done = runListWatch<Obj>(client, TARGET, { signal: controller.signal, onChange: (c) => changes.push(c) });
    await until(() => requests.filter((u) => u.searchParams.get("watch") === "true").length === 2, "the second watch");
    controller.abort();
    await done;
    assert.deepEqual(summary(changes), ["ADDED d@11"]);
  });

  it("opens the watch again from the same resourceVersion after the inactivity timeout", async () => {
    lists = [list("5", [])];
    watches = [watch([]), watch([])];
    const controller = new AbortController();
    const done = runListWatch<Obj>(client, TARGET, {
      signal: controller.signal,
      onChange: () => undefined,
      inactivityMs: 200,
    });
    await until(() => requests.filter((u) => u.searchParams.get("watch") === "true").length === 2, "the second watch");
    controller.abort();
    await done;
    assert.deepEqual(
      requests.filter((u) => u.searchParams.get("watch") === "true").map((u) => u.searchParams.get("resourceVersion")),
      ["5", "5"],
    );
  });

  it("rejects at once when the watch is forbidden", async () => {
    lists = [list("5", [])];
    watches = [
      (res) =>
        res
          .writeHead(403, { "content-type": "application/json" })
          .end(JSON.stringify({ kind: "Status", code: 403, reason: "Forbidden", message: "cannot watch jobs" })),
    ];
    await assert.rejects(
      runListWatch<Obj>(client, TARGET, { signal: new AbortController().signal, onChange: () => undefined }),
      (e) => e instanceof ForbiddenError && e.verb === "watch",
    );
  });

  it("shares one list and one watch among subscribers, replays known objects to a late one, and stops with the last", async () => {
    lists = [list("5", [obj("a", "3")])];
    watches = [watch([])];
    const hub = new SharedWatches(client);
    const first: Array<WatchChange<Obj>> = [];
    const late: Array<WatchChange<Obj>> = [];
    const c1 = new AbortController();
    const c2 = new AbortController();
    const s1 = hub.subscribe<Obj>(TARGET, { signal: c1.signal, onChange: (c) => first.push(c) });
    await until(() => openWatches.size === 1, "the watch open");
    let syncedWith = -1;
    const s2 = hub.subscribe<Obj>(TARGET, {
      signal: c2.signal,
      onChange: (c) => late.push(c),
      onSynced: (known) => (syncedWith = known.size),
    });
    assert.deepEqual(summary(late), ["ADDED a@3"]);
    assert.equal(syncedWith, 1);
    for (const res of openWatches) res.write(JSON.stringify({ type: "MODIFIED", object: obj("a", "6") }) + "\n");
    await until(() => first.length === 2 && late.length === 2, "the change at both");
    assert.equal(requests.length, 2, "one list and one watch for both");
    c1.abort();
    await s1;
    assert.equal(hub.size, 1);
    c2.abort();
    await s2;
    assert.equal(hub.size, 0);
    await until(() => openWatches.size === 0, "the watch closed");
  });
});
