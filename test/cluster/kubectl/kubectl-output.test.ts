// What kubectl prints for the credential's apply and delete: which object each line names, and what was done to it.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseApplyOutput, parseDeleteOutput } from "../../../src/cluster/kubectl/kubectl-output.js";

describe("parseApplyOutput", () => {
  it("reads created, configured and unchanged per object and ignores warnings", () => {
    const out =
      "serviceaccount/r created\nWarning: resource roles/r is missing the kubectl.kubernetes.io/last-applied-configuration annotation\nrole.rbac.authorization.k8s.io/r configured\nrolebinding.rbac.authorization.k8s.io/r unchanged\n";
    assert.deepEqual(
      [...parseApplyOutput(out)],
      [
        ["serviceaccount/r", "created"],
        ["role.rbac.authorization.k8s.io/r", "configured"],
        ["rolebinding.rbac.authorization.k8s.io/r", "unchanged"],
      ],
    );
  });
});

describe("parseDeleteOutput", () => {
  it("reads the deleted objects as TYPE/NAME, whatever kubectl adds after deleted", () => {
    const out = 'rolebinding.rbac.authorization.k8s.io "r" deleted\nserviceaccount "r" deleted from ci namespace\n';
    assert.deepEqual([...parseDeleteOutput(out)], ["rolebinding.rbac.authorization.k8s.io/r", "serviceaccount/r"]);
  });
});
