// The local cluster's watches as a client other than kubectl sees them: bookmarks on request, 410 Gone for a resourceVersion too old.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { NAMESPACE, startTestCluster, type TestCluster } from "./harness.js";

/** Reads the watch's newline-delimited events until `enough` says stop (or the stream ends), then aborts it. */
async function readEvents(
  url: string,
  enough: (events: Array<{ type: string; object: any }>) => boolean,
): Promise<Array<{ type: string; object: any }>> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 5000);
  const events: Array<{ type: string; object: any }> = [];
  try {
    const res = await fetch(url, { signal: controller.signal });
    assert.equal(res.status, 200);
    let pending = "";
    for await (const chunk of res.body!) {
      pending += Buffer.from(chunk).toString();
      let i: number;
      while ((i = pending.indexOf("\n")) >= 0) {
        events.push(JSON.parse(pending.slice(0, i)));
        pending = pending.slice(i + 1);
      }
      if (enough(events)) break;
    }
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return events;
}

async function createConfigMap(tc: TestCluster, name: string): Promise<void> {
  const res = await fetch(`${tc.cluster.url}/api/v1/namespaces/${NAMESPACE}/configmaps`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: {} }),
  });
  assert.equal(res.status, 201, await res.text());
}

describe("local cluster watches for API clients", () => {
  let tc: TestCluster;
  before(async () => {
    tc = await startTestCluster({ runtime: "none", watchBookmarkSeconds: 0.2, watchHistoryLimit: 3 });
  });
  after(async () => {
    await tc?.cluster.stop();
  });

  test("a watch with allowWatchBookmarks gets BOOKMARK events carrying the store's resourceVersion", async () => {
    await createConfigMap(tc, "bm-1");
    const base = `${tc.cluster.url}/api/v1/namespaces/${NAMESPACE}/configmaps?watch=true`;
    const events = await readEvents(`${base}&allowWatchBookmarks=true`, (e) => e.some((x) => x.type === "BOOKMARK"));
    const bookmark = events.find((e) => e.type === "BOOKMARK")!;
    assert.equal(bookmark.object.kind, "ConfigMap");
    assert.equal(bookmark.object.apiVersion, "v1");
    const list = (await (await fetch(`${tc.cluster.url}/api/v1/namespaces/${NAMESPACE}/configmaps`)).json()) as {
      metadata: { resourceVersion: string };
    };
    assert.equal(bookmark.object.metadata.resourceVersion, list.metadata.resourceVersion);
  });

  test("a watch that did not ask for bookmarks gets none", async () => {
    const started = Date.now();
    const events = await readEvents(
      `${tc.cluster.url}/api/v1/namespaces/${NAMESPACE}/configmaps?watch=true&timeoutSeconds=1`,
      () => false,
    );
    assert.ok(Date.now() - started >= 900);
    assert.ok(
      events.every((e) => e.type !== "BOOKMARK"),
      JSON.stringify(events.map((e) => e.type)),
    );
  });

  test("a watch from a resourceVersion older than the kept history ends with an in-stream 410 Expired", async () => {
    for (let i = 0; i < 5; i++) await createConfigMap(tc, `old-${i}`);
    const events = await readEvents(
      `${tc.cluster.url}/api/v1/namespaces/${NAMESPACE}/configmaps?watch=true&resourceVersion=1`,
      (e) => e.length > 0,
    );
    assert.equal(events[0]!.type, "ERROR");
    assert.equal(events[0]!.object.code, 410);
    assert.equal(events[0]!.object.reason, "Expired");
  });
});
