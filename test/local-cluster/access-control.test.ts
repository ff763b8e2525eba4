// Who a request is (issued tokens, expiry, deleted ServiceAccounts, the admin) and the 401/403 Status shapes kube-apiserver sends.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AccessControl, ADMIN_USER, forbidden } from "../../local-cluster/access-control.js";
import { ApiError } from "../../local-cluster/api-error.js";
import { ObjectStore } from "../../local-cluster/store.js";
import { TokenAuthority } from "../../local-cluster/tokens.js";

function makeAccess(): {
  store: ObjectStore;
  tokens: TokenAuthority;
  access: AccessControl;
  clock: { now: number };
  issue: (seconds?: number) => string;
} {
  const clock = { now: 1_000_000 };
  const store = new ObjectStore();
  const tokens = new TokenAuthority(() => clock.now);
  const access = new AccessControl(store, tokens, "admin-secret");
  const account = store.create("serviceaccounts", {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: "runner", namespace: "ci", uid: "", resourceVersion: "", creationTimestamp: "" },
  });
  const issue = (seconds = 600): string =>
    tokens.issue({ namespace: "ci", serviceAccount: "runner", serviceAccountUid: account.metadata.uid }, seconds, [
      "aud",
    ]).token;
  return { store, tokens, access, clock, issue };
}

function isUnauthorized(error: unknown): boolean {
  assert.ok(error instanceof ApiError);
  assert.deepEqual(error.toStatus(), {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: "Unauthorized",
    reason: "Unauthorized",
    code: 401,
  });
  return true;
}

describe("AccessControl.authenticate", () => {
  it("takes a request without credentials, or with the admin token, for the admin", () => {
    const { access } = makeAccess();
    assert.equal(access.authenticate(undefined), ADMIN_USER);
    assert.equal(access.authenticate("Bearer admin-secret"), ADMIN_USER);
  });

  it("takes an issued token for its ServiceAccount, with the ServiceAccount groups", () => {
    const { access, issue, store } = makeAccess();
    const user = access.authenticate(`Bearer ${issue()}`);
    assert.deepEqual(user, {
      username: "system:serviceaccount:ci:runner",
      uid: store.get("serviceaccounts", "ci", "runner")!.metadata.uid,
      groups: ["system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"],
    });
  });

  it("refuses an unknown token, another scheme and an empty one with 401", () => {
    const { access } = makeAccess();
    assert.throws(() => access.authenticate("Bearer lc1.made-up"), isUnauthorized);
    assert.throws(() => access.authenticate("Basic YWRtaW46YWRtaW4="), isUnauthorized);
    assert.throws(() => access.authenticate("Bearer "), isUnauthorized);
  });

  it("refuses a token from the moment its lifetime is over", () => {
    const { access, issue, clock } = makeAccess();
    const token = issue(600);
    clock.now += 599_999;
    assert.equal(access.authenticate(`Bearer ${token}`).username, "system:serviceaccount:ci:runner");
    clock.now += 1;
    assert.throws(() => access.authenticate(`Bearer ${token}`), isUnauthorized);
  });

  it("refuses a token whose ServiceAccount was deleted, even once one of the same name is made again", () => {
    const { access, issue, store } = makeAccess();
    const token = issue();
    store.remove("serviceaccounts", "ci", "runner");
    assert.throws(() => access.authenticate(`Bearer ${token}`), isUnauthorized);
    store.create("serviceaccounts", {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "runner", namespace: "ci", uid: "", resourceVersion: "", creationTimestamp: "" },
    });
    assert.throws(() => access.authenticate(`Bearer ${token}`), isUnauthorized);
  });

  it("expires tokens on demand, for tests that cannot wait ten minutes", () => {
    const { access, issue, tokens } = makeAccess();
    const token = issue(86_400);
    assert.equal(tokens.expire({ namespace: "ci", serviceAccount: "other" }), 0);
    assert.equal(tokens.expire({ namespace: "ci", serviceAccount: "runner" }), 1);
    assert.throws(() => access.authenticate(`Bearer ${token}`), isUnauthorized);
  });

  it("keeps no token itself, only who it was issued to", () => {
    const { tokens, issue } = makeAccess();
    const token = issue();
    assert.doesNotMatch(JSON.stringify(tokens.list()), new RegExp(token.slice(4)));
  });
});

describe("forbidden", () => {
  const user = { username: "system:serviceaccount:ci:runner", groups: [] };

  it("words a namespaced denial as kube-apiserver, with the group and resource as details", () => {
    const error = forbidden(user, {
      kind: "resource",
      verb: "create",
      apiGroup: "batch",
      apiVersion: "v1",
      resource: "jobs",
      namespace: "ci",
    });
    assert.deepEqual(error.toStatus(), {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message:
        'jobs.batch is forbidden: User "system:serviceaccount:ci:runner" cannot create resource "jobs" in API group "batch" in the namespace "ci"',
      reason: "Forbidden",
      details: { group: "batch", kind: "jobs" },
      code: 403,
    });
  });

  it("names the object, the subresource and the core group as kube-apiserver does", () => {
    const error = forbidden(user, {
      kind: "resource",
      verb: "get",
      apiGroup: "",
      apiVersion: "v1",
      resource: "pods",
      subresource: "exec",
      name: "p",
      namespace: "ci",
    });
    assert.equal(
      error.message,
      'pods "p" is forbidden: User "system:serviceaccount:ci:runner" cannot get resource "pods/exec" in API group "" in the namespace "ci"',
    );
    assert.deepEqual(error.details, { name: "p", kind: "pods" });
  });

  it("words the cluster scope, a non-resource path and an RBAC reason", () => {
    assert.equal(
      forbidden(
        user,
        { kind: "resource", verb: "list", apiGroup: "", apiVersion: "v1", resource: "nodes" },
        'RBAC: role.rbac.authorization.k8s.io "x" not found',
      ).message,
      'nodes is forbidden: User "system:serviceaccount:ci:runner" cannot list resource "nodes" in API group "" at the cluster scope: RBAC: role.rbac.authorization.k8s.io "x" not found',
    );
    assert.equal(
      forbidden(user, { kind: "nonResource", verb: "get", path: "/_faults" }).message,
      'forbidden: User "system:serviceaccount:ci:runner" cannot get path "/_faults"',
    );
  });
});
