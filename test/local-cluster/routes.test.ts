// Request paths map to discovery, OpenAPI, admin and resource routes.

import assert from "node:assert/strict";
import { test } from "node:test";
import { parseRoute } from "../../local-cluster/routes.js";

test("namespaced resources, names and subresources are recognised", () => {
  const r = parseRoute("/api/v1/namespaces/ci/pods/run-abcde/exec");
  assert.equal(r.kind, "resource");
  if (r.kind !== "resource") return;
  assert.equal(r.type.resource, "pods");
  assert.equal(r.namespace, "ci");
  assert.equal(r.name, "run-abcde");
  assert.equal(r.subresource, "exec");
});

test("a namespace itself is a cluster-scoped resource and jobs live under batch/v1", () => {
  const ns = parseRoute("/api/v1/namespaces/ci");
  assert.ok(ns.kind === "resource" && ns.type.resource === "namespaces" && ns.name === "ci");
  const jobs = parseRoute("/apis/batch/v1/namespaces/ci/jobs");
  assert.ok(jobs.kind === "resource" && jobs.type.kind === "Job" && jobs.name === undefined);
});

test("discovery and OpenAPI paths are their own routes and unknown paths are unknown", () => {
  assert.deepEqual(parseRoute("/apis/batch/v1"), { kind: "groupVersion", group: "batch", version: "v1" });
  assert.deepEqual(parseRoute("/openapi/v3/apis/batch/v1"), {
    kind: "openapiGroupVersion",
    group: "batch",
    version: "v1",
  });
  assert.equal(parseRoute("/apis/apps/v1/namespaces/ci/deployments").kind, "unknown");
});
