// The object store assigns resourceVersions and uids, detects conflicts and replays history for watches.

import assert from "node:assert/strict";
import { test } from "node:test";
import { ObjectStore } from "../../local-cluster/store.js";
import type { KubeObject } from "../../local-cluster/types.js";

function buildConfigMap(name: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: "ci", uid: "", resourceVersion: "", creationTimestamp: "" },
    data: {},
  };
}

test("creates get increasing resourceVersions, a uid and a creationTimestamp", () => {
  const s = new ObjectStore();
  const a = s.create("configmaps", buildConfigMap("a"));
  const b = s.create("configmaps", buildConfigMap("b"));
  assert.ok(Number(b.metadata.resourceVersion) > Number(a.metadata.resourceVersion));
  assert.match(a.metadata.uid, /^[0-9a-f-]{36}$/);
  assert.match(a.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
});

test("a second create of the same name is AlreadyExists and a stale update is Conflict", () => {
  const s = new ObjectStore();
  const a = s.create("configmaps", buildConfigMap("a"));
  assert.throws(
    () => s.create("configmaps", buildConfigMap("a")),
    (e: any) => e.code === 409 && e.reason === "AlreadyExists",
  );
  s.update("configmaps", { ...a, data: { x: "1" } }, a.metadata.resourceVersion);
  assert.throws(
    () => s.update("configmaps", { ...a, data: { x: "2" } }, a.metadata.resourceVersion),
    (e: any) => e.code === 409 && e.reason === "Conflict",
  );
});

test("events since a resourceVersion replay later changes of that resource only", () => {
  const s = new ObjectStore();
  const a = s.create("configmaps", buildConfigMap("a"));
  s.create("secrets", { ...buildConfigMap("x"), kind: "Secret" });
  s.mutate("configmaps", "ci", "a", (o) => (o.data = { y: "1" }));
  s.remove("configmaps", "ci", "a");
  const replay = s.eventsSince("configmaps", Number(a.metadata.resourceVersion));
  assert.notEqual(replay, "expired");
  assert.deepEqual(
    (replay as any[]).map((e) => e.type),
    ["MODIFIED", "DELETED"],
  );
});

test("a listener that writes while being notified does not overtake the change for later listeners", () => {
  const s = new ObjectStore();
  const seen: string[] = [];
  s.subscribe((e) => {
    if (e.type === "ADDED") s.mutate("configmaps", "ci", e.object.metadata.name, (o) => (o.data = { touched: "yes" }));
  });
  s.subscribe((e) => seen.push(e.type));
  s.create("configmaps", buildConfigMap("a"));
  assert.deepEqual(seen, ["ADDED", "MODIFIED"]);
});

test("changes keep every version of every object, deleted ones too, and say when the history no longer reaches the first", () => {
  const s = new ObjectStore();
  assert.deepEqual(s.changes(), { events: [], complete: true });
  const a = s.create("configmaps", buildConfigMap("a"));
  s.update("configmaps", { ...a, data: { x: "1" } });
  s.remove("configmaps", "ci", "a");
  const { events, complete } = s.changes();
  assert.equal(complete, true);
  assert.deepEqual(
    events.map((e) => [e.type, e.object.metadata.name, e.object.data]),
    [
      ["ADDED", "a", {}],
      ["MODIFIED", "a", { x: "1" }],
      ["DELETED", "a", { x: "1" }],
    ],
  );
  const small = new ObjectStore(2);
  for (const name of ["a", "b", "c"]) small.create("configmaps", buildConfigMap(name));
  assert.deepEqual([small.changes().events.length, small.changes().complete], [2, false]);
});
