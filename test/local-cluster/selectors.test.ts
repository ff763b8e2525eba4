// Label and field selectors match objects the way the API server does.

import assert from "node:assert/strict";
import { test } from "node:test";
import { buildObjectFilter, matchesFilter, parseLabelSelector } from "../../local-cluster/selectors.js";
import type { KubeObject } from "../../local-cluster/types.js";

const pod = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name: "p1",
    namespace: "ci",
    uid: "u",
    resourceVersion: "1",
    creationTimestamp: "",
    labels: { app: "web", tier: "ci" },
  },
  status: { phase: "Running" },
} as KubeObject;

test("equality, inequality, set and existence requirements combine with AND", () => {
  const cases: [string, boolean][] = [
    ["app=web", true],
    ["app==web", true],
    ["app!=web", false],
    ["app=web,tier=ci", true],
    ["app=web,tier=cd", false],
    ["tier in (cd, ci)", true],
    ["tier notin (ci)", false],
    ["app", true],
    ["!app", false],
    ["missing!=x", true],
  ];
  for (const [selector, expected] of cases)
    assert.equal(matchesFilter(buildObjectFilter(selector, ""), pod), expected, selector);
});

test("field selectors read dotted paths and compare as strings", () => {
  assert.equal(matchesFilter(buildObjectFilter("", "metadata.name=p1,status.phase=Running"), pod), true);
  assert.equal(matchesFilter(buildObjectFilter("", "status.phase!=Running"), pod), false);
  assert.equal(matchesFilter(buildObjectFilter("", "spec.nodeName="), pod), true);
});

test("an unparsable label selector is a BadRequest", () => {
  assert.throws(
    () => parseLabelSelector("a in b"),
    (e: any) => e.code === 400,
  );
});
