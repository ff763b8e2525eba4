import assert from "node:assert/strict";
import { describe, it } from "node:test";
import * as kubectlArgs from "../../../src/cluster/kubectl/kubectl-args.js";
import {
  ADMIN_KUBECTL_CALLS,
  KUBECTL_CALLS,
  buildApplyCredentialArgs,
  buildConfigViewArgs,
  buildDeleteCredentialArgs,
  buildTokenRequestArgs,
} from "../../../src/cluster/kubectl/kubectl-args.js";
import { collectCallPermissions, formatPermissions } from "../../../src/cluster/permissions.js";

describe("the kubectl call builders", () => {
  const builders = Object.entries(kubectlArgs).filter(([name]) => /^build.*Args$/.test(name));

  it("declare the permissions of every call, so none can be added without one", () => {
    assert.ok(builders.length >= 11);
    for (const [name, builder] of builders) {
      const call = builder as (typeof KUBECTL_CALLS)[number] & { needsNoPermission?: string };
      assert.ok(Array.isArray(call.permissions), `${name} declares no permissions`);
      const listed = [KUBECTL_CALLS.includes(call), ADMIN_KUBECTL_CALLS.includes(call)];
      assert.deepEqual(
        listed,
        call.scope === "admin" ? [false, true] : [true, false],
        `${name} (${call.scope}) must be listed in exactly the list of its scope`,
      );
      if (call.scope === "runner")
        assert.ok(
          call.permissions.length > 0 || (call.needsNoPermission ?? "") !== "",
          `${name} declares neither a permission nor why it needs none`,
        );
    }
  });

  it("collect into one rule per resource, verbs merged and sorted", () => {
    assert.deepEqual(collectCallPermissions(), [
      { apiGroup: "", resource: "events", verbs: ["list", "watch"] },
      { apiGroup: "", resource: "pods", verbs: ["get", "list", "watch"] },
      { apiGroup: "", resource: "pods/exec", verbs: ["create", "get"] },
      { apiGroup: "", resource: "pods/log", verbs: ["get"] },
      { apiGroup: "batch", resource: "jobs", verbs: ["create", "delete", "get", "list", "patch", "watch"] },
      { apiGroup: "coordination.k8s.io", resource: "leases", verbs: ["create", "delete", "get", "list", "update"] },
      { apiGroup: "policy", resource: "poddisruptionbudgets", verbs: ["create", "delete", "list"] },
    ]);
  });

  it("leave the optional diagnostics' permissions out of what the runner needs", () => {
    const optional = KUBECTL_CALLS.filter((call) => call.optional).flatMap((call) =>
      call.permissions.map((p) => p.resource),
    );
    assert.deepEqual(optional.sort(), ["namespaces", "nodes", "persistentvolumeclaims"]);
    const needed = collectCallPermissions().map((p) => p.resource);
    for (const resource of optional) assert.ok(!needed.includes(resource), `${resource} is not part of the Role`);
  });

  it("put what a call needs into words for messages about a refused one", () => {
    assert.equal(formatPermissions(kubectlArgs.buildWatchJobArgs.permissions), "get and watch on jobs.batch");
    assert.equal(formatPermissions(kubectlArgs.buildExecArgs.permissions), "get on pods; get and create on pods/exec");
  });

  it("build the annotation patch as one JSON merge patch of the Job's metadata", () => {
    const args = kubectlArgs.buildAnnotateJobArgs({ namespace: "ci" }, "knotless-run-1", {
      "knotless.dev/heartbeat": "2026-01-01T00:00:00.000Z",
    });
    assert.deepEqual(args.slice(0, 7), ["--namespace", "ci", "patch", "job", "knotless-run-1", "--type", "merge"]);
    assert.deepEqual(JSON.parse(args[args.indexOf("-p") + 1]!), {
      metadata: { annotations: { "knotless.dev/heartbeat": "2026-01-01T00:00:00.000Z" } },
    });
  });

  it("build the claim of a run as one merge patch that carries the resourceVersion the Job must still be at", () => {
    const args = kubectlArgs.buildClaimJobArgs({ namespace: "ci" }, "knotless-run-1", "4711", {
      "knotless.dev/instance": "b",
    });
    assert.deepEqual(args.slice(0, 7), ["--namespace", "ci", "patch", "job", "knotless-run-1", "--type", "merge"]);
    assert.deepEqual(JSON.parse(args[args.indexOf("-p") + 1]!), {
      metadata: { resourceVersion: "4711", annotations: { "knotless.dev/instance": "b" } },
    });
  });

  it("name the Lease resource with its group, and replace a Lease rather than apply it (a PUT at the version read)", () => {
    assert.deepEqual(kubectlArgs.buildGetLeaseArgs({ namespace: "ci" }, "knotless-instance-a").slice(0, 5), [
      "--namespace",
      "ci",
      "get",
      "leases.coordination.k8s.io",
      "knotless-instance-a",
    ]);
    assert.equal(kubectlArgs.buildUpdateLeaseArgs({ namespace: "ci" })[2], "replace");
    assert.deepEqual(JSON.parse(kubectlArgs.buildDeleteLeaseBody("9")), {
      kind: "DeleteOptions",
      apiVersion: "v1",
      preconditions: { resourceVersion: "9" },
    });
  });

  it("never let an admin call into the runner's permissions, even when handed the admin calls", () => {
    assert.deepEqual(collectCallPermissions([...KUBECTL_CALLS, ...ADMIN_KUBECTL_CALLS]), collectCallPermissions());
    assert.deepEqual(collectCallPermissions(ADMIN_KUBECTL_CALLS), []);
  });
});

describe("the admin calls of credentials", () => {
  const target = { kubeconfig: "/k/admin", context: "tenant", namespace: "ci" };

  it("read the admin kubeconfig through kubectl's own merge rules, for its context only", () => {
    assert.deepEqual(buildConfigViewArgs(target), [
      "--kubeconfig",
      "/k/admin",
      "--context",
      "tenant",
      "config",
      "view",
      "--raw",
      "--minify",
      "--flatten",
      "-o",
      "json",
    ]);
    assert.deepEqual(buildConfigViewArgs({}), ["config", "view", "--raw", "--minify", "--flatten", "-o", "json"]);
  });

  it("apply the objects from stdin in the namespace, and post the TokenRequest from stdin, so no token or body is in argv", () => {
    assert.deepEqual(buildApplyCredentialArgs(target), [
      "--kubeconfig",
      "/k/admin",
      "--context",
      "tenant",
      "--namespace",
      "ci",
      "apply",
      "--request-timeout",
      "30s",
      "-f",
      "-",
    ]);
    assert.deepEqual(buildTokenRequestArgs(target, "ci", "knotless-runner"), [
      "--kubeconfig",
      "/k/admin",
      "--context",
      "tenant",
      "create",
      "--raw",
      "/api/v1/namespaces/ci/serviceaccounts/knotless-runner/token",
      "--request-timeout",
      "30s",
      "-f",
      "-",
    ]);
  });

  it("delete the binding, the role and the ServiceAccount, gone or not", () => {
    assert.deepEqual(buildDeleteCredentialArgs(target, "knotless-runner"), [
      "--kubeconfig",
      "/k/admin",
      "--context",
      "tenant",
      "--namespace",
      "ci",
      "delete",
      "rolebinding.rbac.authorization.k8s.io/knotless-runner",
      "role.rbac.authorization.k8s.io/knotless-runner",
      "serviceaccount/knotless-runner",
      "--ignore-not-found",
      "--wait=false",
      "--request-timeout",
      "30s",
    ]);
  });
});

describe("buildLogsArgs", () => {
  it("asks for the container's last lines, bounded in bytes, with get on pods/log", () => {
    assert.deepEqual(kubectlArgs.buildLogsArgs({ kubeconfig: "/k", namespace: "ci" }, "pod-1", "postgres", 40, 8192), [
      "--kubeconfig",
      "/k",
      "--namespace",
      "ci",
      "logs",
      "pod-1",
      "-c",
      "postgres",
      "--tail",
      "40",
      "--limit-bytes",
      "8192",
      "--request-timeout",
      "30s",
    ]);
    assert.equal(formatPermissions(kubectlArgs.buildLogsArgs.permissions), "get on pods/log");
  });
});
