// A TokenRequest answer, whose token is never echoed.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InfraError } from "../../../src/core/errors.js";
import { readTokenAnswer } from "../../../src/ops/credentials/token-answer.js";

describe("readTokenAnswer", () => {
  it("takes the token and the expiry the API server set", () => {
    const answer = readTokenAnswer(
      JSON.stringify({
        kind: "TokenRequest",
        status: { token: "tok.en", expirationTimestamp: "2026-12-02T10:00:00Z" },
      }),
    );
    assert.equal(answer.token, "tok.en");
    assert.equal(answer.expiresAt.toISOString(), "2026-12-02T10:00:00.000Z");
  });

  it("fails without quoting what kubectl printed, which may be a token", () => {
    for (const text of [
      "secret-token-not-json",
      JSON.stringify({ status: { token: "secret-token" } }),
      JSON.stringify({ status: {} }),
    ]) {
      assert.throws(
        () => readTokenAnswer(text),
        (e) => e instanceof InfraError && e.reason === "credentials-failed" && !e.message.includes("secret-token"),
      );
    }
  });
});
