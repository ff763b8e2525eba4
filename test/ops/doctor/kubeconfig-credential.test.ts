import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decodeJwtClaims, parseContextView } from "../../../src/ops/doctor/kubeconfig-credential.js";

const b64url = (value: object): string => Buffer.from(JSON.stringify(value)).toString("base64url");
/** An unsigned JWT with these claims (doctor reads claims, it never checks signatures). */
export function makeJwt(claims: object): string {
  return `${b64url({ alg: "RS256", kid: "k" })}.${b64url(claims)}.c2lnbmF0dXJl`;
}

function view(user: object, namespace?: string): string {
  return JSON.stringify({
    kind: "Config",
    clusters: [{ name: "c", cluster: { server: "https://gw.example:6443" } }],
    users: [{ name: "u", user }],
    contexts: [{ name: "x", context: { cluster: "c", user: "u", ...(namespace ? { namespace } : {}) } }],
    "current-context": "x",
  });
}

describe("decodeJwtClaims", () => {
  it("reads a service account token's exp and sub", () => {
    assert.deepEqual(
      decodeJwtClaims(makeJwt({ exp: 1_800_000_000, sub: "system:serviceaccount:ci:knotless-runner" })),
      { expiresAt: 1_800_000_000_000, subject: "system:serviceaccount:ci:knotless-runner" },
    );
  });

  it("says nothing of a token that is not a JWT, or one without exp", () => {
    assert.equal(decodeJwtClaims("abcdef.0123456789abcdef"), undefined, "a bootstrap token");
    assert.equal(decodeJwtClaims("static-token-value"), undefined);
    assert.equal(decodeJwtClaims("a.b!.c"), undefined);
    assert.deepEqual(decodeJwtClaims(makeJwt({ sub: "x" })), { expiresAt: undefined, subject: "x" });
  });
});

describe("parseContextView", () => {
  it("reads the context's namespace and server and the kind of credential, never keeping the secret", () => {
    const token = makeJwt({ exp: 1_800_000_000 });
    const facts = parseContextView(view({ token }, "ci"));
    assert.deepEqual(facts, {
      namespace: "ci",
      server: "https://gw.example:6443",
      credential: { kind: "token", jwt: { expiresAt: 1_800_000_000_000, subject: undefined } },
    });
    assert.ok(!JSON.stringify(facts).includes(token));
  });

  it("tells tokens, token files, certificates, exec plugins and no credential apart", () => {
    const kind = (user: object) => parseContextView(view(user))?.credential.kind;
    assert.equal(kind({ tokenFile: "/var/run/token" }), "token-file");
    assert.equal(kind({ "client-certificate-data": "bm90IGEgY2VydA==", "client-key-data": "x" }), "client-certificate");
    assert.deepEqual(
      parseContextView(view({ exec: { command: "oauth-signin", apiVersion: "client.authentication.k8s.io/v1" } }))
        ?.credential,
      { kind: "exec", command: "oauth-signin" },
    );
    assert.equal(kind({}), "none");
    assert.equal(parseContextView(view({}))?.namespace, undefined);
    assert.equal(parseContextView("not json"), undefined);
  });
});
