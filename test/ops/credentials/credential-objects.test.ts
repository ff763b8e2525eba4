// The credential's objects: a Role of exactly the runner's calls' permissions, namespaced, bound to its ServiceAccount only.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  buildCredentialObjects,
  buildRoleRules,
  buildTokenRequest,
  formatServiceAccountUser,
  listObjectRefs,
} from "../../../src/ops/credentials/credential-objects.js";
import { buildRequestObjects } from "../../../src/ops/credentials/credential-plan.js";
import { buildApplyDocuments } from "../../../src/cluster/kubectl/kubectl-cluster.js";
import { collectCallPermissions } from "../../../src/cluster/permissions.js";
import { parseAllDocuments } from "yaml";

const IDENTITY = { namespace: "ci", name: "knotless-runner" };

describe("the credential's Role", () => {
  const role = buildRequestObjects({ identity: IDENTITY }).role as {
    kind: string;
    metadata: { namespace: string };
    rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
  };

  it("grants one rule per resource the runner's calls use, with exactly their verbs", () => {
    assert.deepEqual(role.rules, [
      { apiGroups: [""], resources: ["events"], verbs: ["list", "watch"] },
      { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"] },
      { apiGroups: [""], resources: ["pods/exec"], verbs: ["create", "get"] },
      { apiGroups: [""], resources: ["pods/log"], verbs: ["get"] },
      { apiGroups: ["batch"], resources: ["jobs"], verbs: ["create", "delete", "get", "list", "patch", "watch"] },
      {
        apiGroups: ["coordination.k8s.io"],
        resources: ["leases"],
        verbs: ["create", "delete", "get", "list", "update"],
      },
      { apiGroups: ["policy"], resources: ["poddisruptionbudgets"], verbs: ["create", "delete", "list"] },
    ]);
    assert.deepEqual(role.rules, buildRoleRules(collectCallPermissions()));
  });

  it("is a namespaced Role with no wildcard, no secrets or configmaps and nothing of the admin's calls", () => {
    assert.equal(role.kind, "Role");
    assert.equal(role.metadata.namespace, "ci");
    const text = JSON.stringify(role.rules);
    assert.doesNotMatch(text, /\*|secrets|configmaps|serviceaccounts|roles|rolebindings|nodes|namespaces/);
  });

  it("follows the permissions it is given, so a narrowed Role can be tested", () => {
    const narrowed = buildCredentialObjects(IDENTITY, [{ apiGroup: "", resource: "pods", verbs: ["get"] }]).role as {
      rules: unknown[];
    };
    assert.deepEqual(narrowed.rules, [{ apiGroups: [""], resources: ["pods"], verbs: ["get"] }]);
  });
});

describe("the credential's other objects", () => {
  const objects = buildRequestObjects({ identity: IDENTITY });

  it("binds the Role to the ServiceAccount of the same namespace and nobody else", () => {
    assert.deepEqual((objects.roleBinding as { roleRef: unknown; subjects: unknown }).roleRef, {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "Role",
      name: "knotless-runner",
    });
    assert.deepEqual((objects.roleBinding as { subjects: unknown }).subjects, [
      { kind: "ServiceAccount", name: "knotless-runner", namespace: "ci" },
    ]);
    assert.equal(formatServiceAccountUser(IDENTITY), "system:serviceaccount:ci:knotless-runner");
  });

  it("are applied as three YAML documents, in the order kubectl reports them", () => {
    const docs = parseAllDocuments(buildApplyDocuments(objects)).map(
      (d) => d.toJS() as { kind: string; metadata: { name: string; labels: Record<string, string> } },
    );
    assert.deepEqual(
      docs.map((d) => d.kind),
      ["ServiceAccount", "Role", "RoleBinding"],
    );
    assert.ok(
      docs.every(
        (d) =>
          d.metadata.name === "knotless-runner" &&
          d.metadata.labels["app.kubernetes.io/managed-by"] === "knotless-runner-k8s",
      ),
    );
    assert.deepEqual(listObjectRefs(IDENTITY), [
      "serviceaccount/knotless-runner",
      "role.rbac.authorization.k8s.io/knotless-runner",
      "rolebinding.rbac.authorization.k8s.io/knotless-runner",
    ]);
  });

  it("asks the TokenRequest API for the lifetime given", () => {
    assert.deepEqual(buildTokenRequest(86_400), {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { expirationSeconds: 86_400 },
    });
  });
});
