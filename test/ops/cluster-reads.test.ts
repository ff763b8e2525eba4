// What a failed call of an operator command is: bad input, unreachable, refused (403), not accepted (401), or other.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InfraError, InputError } from "../../src/core/errors.js";
import { describeOperatorCallFailure } from "../../src/ops/cluster-reads.js";
import { mapKubectlFailure } from "../../src/cluster/kubectl/kubectl-errors.js";

const fail = (stderr: string) => describeOperatorCallFailure("listing the Jobs", mapKubectlFailure(stderr));

describe("describeOperatorCallFailure", () => {
  it("tells a missing permission (403) from a credential the server does not accept (401)", () => {
    const refused = fail(
      'Error from server (Forbidden): jobs.batch is forbidden: User "u" cannot list resource "jobs"\n',
    );
    assert.ok(refused instanceof InfraError && refused.reason === "forbidden");
    assert.match(refused.message, /^listing the Jobs: .*Forbidden.*lacks this permission/);
    const expired = fail("error: You must be logged in to the server (Unauthorized)\n");
    assert.ok(expired instanceof InfraError && expired.reason === "unauthorized");
    assert.match(expired.message, /^listing the Jobs: .*Unauthorized.*unknown, expired or revoked/);
  });

  it("makes a kubeconfig kubectl refuses bad input and an unreachable cluster cluster-unreachable", () => {
    assert.ok(fail('error: context "nope" does not exist\n') instanceof InputError);
    const down = fail("Unable to connect to the server: dial tcp 127.0.0.1:1: connect: connection refused\n");
    assert.ok(down instanceof InfraError && down.reason === "cluster-unreachable");
  });
});
