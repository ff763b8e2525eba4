// Requests map to the RBAC attributes kube-apiserver derives: verb, group, resource, subresource, name, namespace.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { describeExecUpgrade, describeRequest } from "../../local-cluster/request-attributes.js";
import { parseRoute } from "../../local-cluster/routes.js";

function attributesOf(method: string, path: string): ReturnType<typeof describeRequest> {
  const url = new URL(path, "https://local");
  return describeRequest(parseRoute(url.pathname), method, url);
}

describe("describeRequest", () => {
  it("reads get, list and watch from a GET by name and query", () => {
    assert.deepEqual(attributesOf("GET", "/apis/batch/v1/namespaces/ci/jobs/run-1"), {
      kind: "resource",
      verb: "get",
      apiGroup: "batch",
      apiVersion: "v1",
      resource: "jobs",
      name: "run-1",
      namespace: "ci",
    });
    assert.equal(
      (attributesOf("GET", "/api/v1/namespaces/ci/pods?labelSelector=a%3Db") as { verb: string }).verb,
      "list",
    );
    assert.equal((attributesOf("GET", "/api/v1/namespaces/ci/pods?watch=true") as { verb: string }).verb, "watch");
  });

  it("reads create, update, patch, delete and deletecollection from the other methods", () => {
    const verb = (method: string, path: string): string => (attributesOf(method, path) as { verb: string }).verb;
    assert.equal(verb("POST", "/apis/batch/v1/namespaces/ci/jobs"), "create");
    assert.equal(verb("PUT", "/apis/batch/v1/namespaces/ci/jobs/j"), "update");
    assert.equal(verb("PATCH", "/apis/batch/v1/namespaces/ci/jobs/j"), "patch");
    assert.equal(verb("DELETE", "/apis/batch/v1/namespaces/ci/jobs/j"), "delete");
    assert.equal(verb("DELETE", "/apis/batch/v1/namespaces/ci/jobs"), "deletecollection");
  });

  it("keeps the subresource apart, as in a TokenRequest or an exec", () => {
    assert.deepEqual(attributesOf("POST", "/api/v1/namespaces/ci/serviceaccounts/runner/token"), {
      kind: "resource",
      verb: "create",
      apiGroup: "",
      apiVersion: "v1",
      resource: "serviceaccounts",
      subresource: "token",
      name: "runner",
      namespace: "ci",
    });
  });

  it("takes a namespace's own name as its namespace, and leaves cluster-scoped requests without one", () => {
    assert.equal((attributesOf("GET", "/api/v1/namespaces/ci") as { namespace?: string }).namespace, "ci");
    assert.equal((attributesOf("GET", "/api/v1/nodes") as { namespace?: string }).namespace, undefined);
  });

  it("makes discovery, OpenAPI, admin and unknown paths non-resource requests of their path", () => {
    assert.deepEqual(attributesOf("GET", "/apis/batch/v1"), {
      kind: "nonResource",
      verb: "get",
      path: "/apis/batch/v1",
    });
    assert.deepEqual(attributesOf("PUT", "/_faults"), { kind: "nonResource", verb: "put", path: "/_faults" });
    assert.deepEqual(attributesOf("GET", "/apis/apps/v1/namespaces/ci/deployments"), {
      kind: "nonResource",
      verb: "get",
      path: "/apis/apps/v1/namespaces/ci/deployments",
    });
  });
});

describe("describeExecUpgrade", () => {
  const exec = attributesOf("GET", "/api/v1/namespaces/ci/pods/p/exec?command=ls");

  it("checks get and then create for a WebSocket upgrade (a GET), as kube-apiserver 1.35 does", () => {
    assert.deepEqual(
      describeExecUpgrade(exec, "GET").map((a) => a.verb),
      ["get", "create"],
    );
    assert.ok(
      describeExecUpgrade(exec, "GET").every(
        (a) => a.kind === "resource" && a.subresource === "exec" && a.name === "p",
      ),
    );
  });

  it("checks create only for SPDY (a POST)", () => {
    assert.deepEqual(
      describeExecUpgrade(exec, "POST").map((a) => a.verb),
      ["create"],
    );
  });
});
