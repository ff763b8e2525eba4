// What kubectl printed for the credential's calls: apply and delete lines, and a TokenRequest answer whose token is never echoed.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InfraError } from "../../src/errors.js";
import { parseApplyOutput, parseDeleteOutput, readTokenAnswer } from "../../src/credentials/kubectl-output.js";

describe("parseApplyOutput", () => {
  it("reads created, configured and unchanged per object and ignores warnings", () => {
    const out = "serviceaccount/r created\nWarning: resource roles/r is missing the kubectl.kubernetes.io/last-applied-configuration annotation\nrole.rbac.authorization.k8s.io/r configured\nrolebinding.rbac.authorization.k8s.io/r unchanged\n";
    assert.deepEqual([...parseApplyOutput(out)], [["serviceaccount/r", "created"], ["role.rbac.authorization.k8s.io/r", "configured"], ["rolebinding.rbac.authorization.k8s.io/r", "unchanged"]]);
  });
});

describe("parseDeleteOutput", () => {
  it("reads the deleted objects as TYPE/NAME, whatever kubectl adds after deleted", () => {
    const out = 'rolebinding.rbac.authorization.k8s.io "r" deleted\nserviceaccount "r" deleted from ci namespace\n';
    assert.deepEqual([...parseDeleteOutput(out)], ["rolebinding.rbac.authorization.k8s.io/r", "serviceaccount/r"]);
  });
});

describe("readTokenAnswer", () => {
  it("takes the token and the expiry the API server set", () => {
    const answer = readTokenAnswer(JSON.stringify({ kind: "TokenRequest", status: { token: "tok.en", expirationTimestamp: "2026-12-02T10:00:00Z" } }));
    assert.equal(answer.token, "tok.en");
    assert.equal(answer.expiresAt.toISOString(), "2026-12-02T10:00:00.000Z");
  });

  it("fails without quoting what kubectl printed, which may be a token", () => {
    for (const text of ["secret-token-not-json", JSON.stringify({ status: { token: "secret-token" } }), JSON.stringify({ status: {} })]) {
      assert.throws(
        () => readTokenAnswer(text),
        (e) => e instanceof InfraError && e.reason === "credentials-failed" && !e.message.includes("secret-token"),
      );
    }
  });
});
