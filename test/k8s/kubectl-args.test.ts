import assert from "node:assert/strict";
import { describe, it } from "node:test";
import * as kubectlArgs from "../../src/k8s/kubectl-args.js";
import { KUBECTL_CALLS, collectCallPermissions } from "../../src/k8s/kubectl-args.js";

describe("the kubectl call builders", () => {
  const builders = Object.entries(kubectlArgs).filter(([name]) => /^build.*Args$/.test(name));

  it("declare the permissions of every call, so none can be added without one", () => {
    assert.ok(builders.length >= 7);
    for (const [name, builder] of builders) {
      const { permissions, needsNoPermission } = builder as { permissions?: unknown[]; needsNoPermission?: string };
      assert.ok(Array.isArray(permissions), `${name} declares no permission`);
      assert.ok(permissions.length > 0 || (needsNoPermission ?? "") !== "", `${name} declares neither a permission nor why it needs none`);
      assert.ok(KUBECTL_CALLS.includes(builder as (typeof KUBECTL_CALLS)[number]), `${name} is missing from KUBECTL_CALLS`);
    }
  });

  it("collect into one rule per resource, verbs merged and sorted", () => {
    assert.deepEqual(collectCallPermissions(), [
      { apiGroup: "", resource: "events", verbs: ["list"] },
      { apiGroup: "", resource: "pods", verbs: ["get", "list"] },
      { apiGroup: "", resource: "pods/exec", verbs: ["create", "get"] },
      { apiGroup: "batch", resource: "jobs", verbs: ["create", "delete", "get", "list", "patch", "watch"] },
    ]);
  });

  it("leave the optional diagnostics' permissions out of what the runner needs", () => {
    const optional = KUBECTL_CALLS.filter((call) => call.optional).flatMap((call) => call.permissions.map((p) => p.resource));
    assert.deepEqual(optional.sort(), ["namespaces", "nodes"]);
    const needed = collectCallPermissions().map((p) => p.resource);
    for (const resource of optional) assert.ok(!needed.includes(resource), `${resource} is not part of the Role`);
  });

  it("build the annotation patch as one JSON merge patch of the Job's metadata", () => {
    const args = kubectlArgs.buildAnnotateJobArgs({ namespace: "ci" }, "knotless-run-1", { "knotless.dev/heartbeat": "2026-01-01T00:00:00.000Z" });
    assert.deepEqual(args.slice(0, 7), ["--namespace", "ci", "patch", "job", "knotless-run-1", "--type", "merge"]);
    assert.deepEqual(JSON.parse(args[args.indexOf("-p") + 1]!), { metadata: { annotations: { "knotless.dev/heartbeat": "2026-01-01T00:00:00.000Z" } } });
  });
});
