import assert from "node:assert/strict";
import { describe, it } from "node:test";
import * as kubectlArgs from "../../src/k8s/kubectl-args.js";
import { KUBECTL_CALLS, collectCallPermissions } from "../../src/k8s/kubectl-args.js";

describe("the kubectl call builders", () => {
  const builders = Object.entries(kubectlArgs).filter(([name]) => /^build.*Args$/.test(name));

  it("declare the permissions of every call, so none can be added without one", () => {
    assert.ok(builders.length >= 7);
    for (const [name, builder] of builders) {
      const permissions = (builder as { permissions?: unknown[] }).permissions;
      assert.ok(Array.isArray(permissions) && permissions.length > 0, `${name} declares no permission`);
      assert.ok(KUBECTL_CALLS.includes(builder as (typeof KUBECTL_CALLS)[number]), `${name} is missing from KUBECTL_CALLS`);
    }
  });

  it("collect into one rule per resource, verbs merged and sorted", () => {
    assert.deepEqual(collectCallPermissions(), [
      { apiGroup: "", resource: "events", verbs: ["list"] },
      { apiGroup: "", resource: "pods", verbs: ["get", "list"] },
      { apiGroup: "", resource: "pods/exec", verbs: ["create", "get"] },
      { apiGroup: "batch", resource: "jobs", verbs: ["create", "delete", "get", "list"] },
    ]);
  });
});
