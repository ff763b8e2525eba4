// kubectl gets the runner's environment without the variables --secret-env read.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { removeSecretVariables } from "../../src/secrets/remove-secret-variables.js";

describe("removeSecretVariables", () => {
  it("drops a variable that holds its secret's value and keeps the rest, the input untouched", () => {
    const env = { PATH: "/bin", NPM_TOKEN: "tok-1", HOME: "/root", OTHER: "tok-1" };
    assert.deepEqual(removeSecretVariables(env, [{ name: "NPM_TOKEN", value: "tok-1" }]), {
      PATH: "/bin",
      HOME: "/root",
      OTHER: "tok-1",
    });
    assert.equal(env.NPM_TOKEN, "tok-1");
  });

  it("keeps a variable that only shares a secret's name (a secrets file's API_TOKEN is not the environment's)", () => {
    assert.deepEqual(
      removeSecretVariables({ API_TOKEN: "unrelated" }, [{ name: "API_TOKEN", value: "from-the-file" }]),
      { API_TOKEN: "unrelated" },
    );
  });

  it("gives the environment itself back when the run has no secret", () => {
    const env = { PATH: "/bin" };
    assert.equal(removeSecretVariables(env, []), env);
  });
});
