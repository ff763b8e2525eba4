// RBAC decisions as kube-apiserver makes them: rules, subresources, names, subjects, bindings and the bootstrap policy.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  allowsRequest,
  authorize,
  listUserRules,
  type RbacObjects,
  type RequestAttributes,
  type UserInfo,
} from "../../local-cluster/rbac.js";
import type { KubeObject } from "../../local-cluster/types.js";

const RBAC = "rbac.authorization.k8s.io";
const meta = (name: string, namespace?: string) => ({
  name,
  ...(namespace ? { namespace } : {}),
  uid: "",
  resourceVersion: "",
  creationTimestamp: "",
});
const role = (name: string, namespace: string, rules: object[]): KubeObject => ({
  apiVersion: `${RBAC}/v1`,
  kind: "Role",
  metadata: meta(name, namespace),
  rules,
});
const clusterRole = (name: string, rules: object[]): KubeObject => ({
  apiVersion: `${RBAC}/v1`,
  kind: "ClusterRole",
  metadata: meta(name),
  rules,
});
const binding = (
  name: string,
  namespace: string,
  roleRef: { kind: string; name: string },
  subjects: object[],
): KubeObject => ({
  apiVersion: `${RBAC}/v1`,
  kind: "RoleBinding",
  metadata: meta(name, namespace),
  roleRef: { apiGroup: RBAC, ...roleRef },
  subjects,
});
const clusterBinding = (name: string, roleName: string, subjects: object[]): KubeObject => ({
  apiVersion: `${RBAC}/v1`,
  kind: "ClusterRoleBinding",
  metadata: meta(name),
  roleRef: { apiGroup: RBAC, kind: "ClusterRole", name: roleName },
  subjects,
});

const RUNNER: UserInfo = {
  username: "system:serviceaccount:ci:runner",
  groups: ["system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"],
};
const EMPTY: RbacObjects = { roles: [], roleBindings: [], clusterRoles: [], clusterRoleBindings: [] };

function request(
  verb: string,
  resource: string,
  extra: Partial<Extract<RequestAttributes, { kind: "resource" }>> = {},
): RequestAttributes {
  const [res, sub] = resource.split("/");
  return {
    kind: "resource",
    verb,
    apiGroup: "",
    apiVersion: "v1",
    resource: res!,
    ...(sub ? { subresource: sub } : {}),
    namespace: "ci",
    ...extra,
  };
}

describe("allowsRequest", () => {
  it("matches verbs, groups and resources exactly or by *", () => {
    const rule = { verbs: ["get", "list"], apiGroups: [""], resources: ["pods"] };
    assert.equal(allowsRequest(rule, request("get", "pods")), true);
    assert.equal(allowsRequest(rule, request("watch", "pods")), false);
    assert.equal(allowsRequest(rule, request("get", "pods", { apiGroup: "batch" })), false);
    assert.equal(
      allowsRequest({ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }, request("delete", "secrets")),
      true,
    );
  });

  it("keeps a subresource apart from its resource, and */sub matches that subresource of any resource", () => {
    assert.equal(
      allowsRequest({ verbs: ["get"], apiGroups: [""], resources: ["pods"] }, request("get", "pods/exec")),
      false,
    );
    assert.equal(
      allowsRequest({ verbs: ["get"], apiGroups: [""], resources: ["pods/exec"] }, request("get", "pods")),
      false,
    );
    assert.equal(
      allowsRequest({ verbs: ["get"], apiGroups: [""], resources: ["pods/exec"] }, request("get", "pods/exec")),
      true,
    );
    assert.equal(
      allowsRequest({ verbs: ["get"], apiGroups: [""], resources: ["*/exec"] }, request("get", "pods/exec")),
      true,
    );
    assert.equal(
      allowsRequest({ verbs: ["get"], apiGroups: [""], resources: ["*/exec"] }, request("get", "pods/log")),
      false,
    );
    assert.equal(
      allowsRequest({ verbs: ["get"], apiGroups: [""], resources: ["*"] }, request("get", "pods/exec")),
      true,
    );
  });

  it("limits a rule with resourceNames to requests that name one of them", () => {
    const rule = { verbs: ["get", "list"], apiGroups: [""], resources: ["pods"], resourceNames: ["a"] };
    assert.equal(allowsRequest(rule, request("get", "pods", { name: "a" })), true);
    assert.equal(allowsRequest(rule, request("get", "pods", { name: "b" })), false);
    assert.equal(allowsRequest(rule, request("list", "pods")), false);
  });

  it("matches non-resource URLs exactly or by a trailing *", () => {
    const rule = { verbs: ["get"], nonResourceURLs: ["/apis/*", "/version"] };
    assert.equal(allowsRequest(rule, { kind: "nonResource", verb: "get", path: "/apis/batch/v1" }), true);
    assert.equal(allowsRequest(rule, { kind: "nonResource", verb: "get", path: "/version" }), true);
    assert.equal(allowsRequest(rule, { kind: "nonResource", verb: "get", path: "/_faults" }), false);
    assert.equal(allowsRequest(rule, request("get", "pods")), false);
  });
});

describe("authorize", () => {
  const objects: RbacObjects = {
    ...EMPTY,
    roles: [
      role("runner", "ci", [{ verbs: ["create"], apiGroups: ["batch"], resources: ["jobs"] }]),
      role("runner", "other", [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }]),
    ],
    roleBindings: [
      binding("runner", "ci", { kind: "Role", name: "runner" }, [{ kind: "ServiceAccount", name: "runner" }]),
    ],
  };

  it("allows what a RoleBinding to the ServiceAccount grants in its namespace, naming the binding as kube-apiserver does", () => {
    assert.deepEqual(authorize(RUNNER, request("create", "jobs", { apiGroup: "batch" }), objects), {
      allowed: true,
      reason: 'RBAC: allowed by RoleBinding "runner/ci" of Role "runner" to ServiceAccount "runner/ci"',
    });
  });

  it("denies another verb, another namespace and the cluster scope, with no reason", () => {
    assert.deepEqual(authorize(RUNNER, request("delete", "jobs", { apiGroup: "batch" }), objects), {
      allowed: false,
      reason: "",
    });
    assert.equal(
      authorize(RUNNER, request("create", "jobs", { apiGroup: "batch", namespace: "other" }), objects).allowed,
      false,
    );
    const { namespace: _, ...clusterScoped } = request("create", "jobs", { apiGroup: "batch" }) as Extract<
      RequestAttributes,
      { kind: "resource" }
    >;
    assert.equal(authorize(RUNNER, clusterScoped, objects).allowed, false);
  });

  it("does not grant a ServiceAccount subject of another namespace, nor a namesake user", () => {
    const elsewhere: RbacObjects = {
      ...objects,
      roleBindings: [
        binding("runner", "ci", { kind: "Role", name: "runner" }, [
          { kind: "ServiceAccount", name: "runner", namespace: "other" },
        ]),
      ],
    };
    assert.equal(authorize(RUNNER, request("create", "jobs", { apiGroup: "batch" }), elsewhere).allowed, false);
    const user: UserInfo = { username: "runner", groups: ["system:authenticated"] };
    assert.equal(authorize(user, request("create", "jobs", { apiGroup: "batch" }), objects).allowed, false);
  });

  it("grants through a ClusterRole bound in the namespace, and through a ClusterRoleBinding to a group everywhere", () => {
    const viaClusterRole: RbacObjects = {
      ...EMPTY,
      clusterRoles: [clusterRole("reader", [{ verbs: ["list"], apiGroups: [""], resources: ["pods"] }])],
      roleBindings: [
        binding("read", "ci", { kind: "ClusterRole", name: "reader" }, [
          { kind: "ServiceAccount", name: "runner", namespace: "ci" },
        ]),
      ],
      clusterRoleBindings: [clusterBinding("all-sa", "reader", [{ kind: "Group", name: "system:serviceaccounts:ci" }])],
    };
    assert.deepEqual(authorize(RUNNER, request("list", "pods"), viaClusterRole), {
      allowed: true,
      reason:
        'RBAC: allowed by ClusterRoleBinding "all-sa" of ClusterRole "reader" to Group "system:serviceaccounts:ci"',
    });
    assert.equal(authorize(RUNNER, request("list", "pods", { namespace: "other" }), viaClusterRole).allowed, true);
    const { clusterRoleBindings: _, ...rest } = viaClusterRole;
    assert.equal(
      authorize(RUNNER, request("list", "pods", { namespace: "other" }), { ...rest, clusterRoleBindings: [] }).allowed,
      false,
    );
  });

  it("says which role a binding names is missing", () => {
    const dangling: RbacObjects = {
      ...EMPTY,
      roleBindings: [
        binding("runner", "ci", { kind: "Role", name: "gone" }, [{ kind: "ServiceAccount", name: "runner" }]),
      ],
    };
    assert.deepEqual(authorize(RUNNER, request("list", "pods"), dangling), {
      allowed: false,
      reason: 'RBAC: role.rbac.authorization.k8s.io "gone" not found',
    });
  });

  it("lets every authenticated user discover the API and ask about itself, and nothing more", () => {
    assert.equal(authorize(RUNNER, { kind: "nonResource", verb: "get", path: "/apis/batch/v1" }, EMPTY).allowed, true);
    assert.equal(authorize(RUNNER, { kind: "nonResource", verb: "get", path: "/openapi/v3" }, EMPTY).allowed, true);
    const review = {
      kind: "resource",
      verb: "create",
      apiGroup: "authorization.k8s.io",
      apiVersion: "v1",
      resource: "selfsubjectaccessreviews",
    } as const;
    assert.equal(authorize(RUNNER, review, EMPTY).allowed, true);
    assert.equal(authorize(RUNNER, { ...review, resource: "subjectaccessreviews" }, EMPTY).allowed, false);
    assert.equal(authorize(RUNNER, { kind: "nonResource", verb: "get", path: "/_faults" }, EMPTY).allowed, false);
    assert.equal(authorize(RUNNER, request("get", "secrets", { name: "x" }), EMPTY).allowed, false);
  });

  it("lets system:masters do anything", () => {
    assert.deepEqual(
      authorize({ username: "admin", groups: ["system:masters"] }, request("delete", "secrets"), EMPTY),
      { allowed: true, reason: "" },
    );
  });
});

describe("listUserRules", () => {
  it("lists the bootstrap rules and the rules bound in the namespace only", () => {
    const objects: RbacObjects = {
      ...EMPTY,
      roles: [role("runner", "ci", [{ verbs: ["list"], apiGroups: [""], resources: ["events"] }])],
      roleBindings: [
        binding("runner", "ci", { kind: "Role", name: "runner" }, [{ kind: "ServiceAccount", name: "runner" }]),
      ],
    };
    const inCi = listUserRules(RUNNER, "ci", objects).rules;
    assert.ok(inCi.some((r) => r.resources?.includes("events")));
    assert.ok(inCi.some((r) => r.resources?.includes("selfsubjectaccessreviews")));
    assert.ok(!listUserRules(RUNNER, "other", objects).rules.some((r) => r.resources?.includes("events")));
  });
});
