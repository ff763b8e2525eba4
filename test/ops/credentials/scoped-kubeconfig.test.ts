// The scoped kubeconfig: the admin's server and CA, the token, the namespace pinned; never the admin's credentials, never plain http.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { InputError } from "../../../src/core/errors.js";
import {
  buildScopedKubeconfig,
  describeScopedKubeconfig,
  readAdminCluster,
} from "../../../src/ops/credentials/scoped-kubeconfig.js";

const IDENTITY = { namespace: "ci", name: "knotless-runner" };
/** What `kubectl config view --raw --minify --flatten -o json` prints, admin credentials included. */
function configView(server: string): string {
  return JSON.stringify({
    kind: "Config",
    apiVersion: "v1",
    clusters: [
      {
        name: "tenant",
        cluster: { server, "certificate-authority-data": "Q0EtREFUQQ==", "tls-server-name": "api.tenant" },
      },
    ],
    users: [
      {
        name: "admin",
        user: {
          "client-certificate-data": "QURNSU4tQ0VSVA==",
          "client-key-data": "QURNSU4tS0VZ",
          token: "admin-token",
        },
      },
    ],
    contexts: [{ name: "admin@tenant", context: { cluster: "tenant", user: "admin" } }],
    "current-context": "admin@tenant",
  });
}

describe("readAdminCluster and buildScopedKubeconfig", () => {
  it("keep the admin's server, CA and TLS settings, add the token and pin the namespace", () => {
    const text = buildScopedKubeconfig(readAdminCluster(configView("https://gw.example:6443")), IDENTITY, "the-token");
    const config = parse(text);
    assert.deepEqual(config.clusters, [
      {
        name: "tenant",
        cluster: {
          server: "https://gw.example:6443",
          "certificate-authority-data": "Q0EtREFUQQ==",
          "tls-server-name": "api.tenant",
        },
      },
    ]);
    assert.deepEqual(config.users, [{ name: "knotless-runner", user: { token: "the-token" } }]);
    assert.deepEqual(config.contexts, [
      { name: "knotless-runner@tenant", context: { cluster: "tenant", user: "knotless-runner", namespace: "ci" } },
    ]);
    assert.equal(config["current-context"], "knotless-runner@tenant");
    assert.doesNotMatch(text, /admin-token|QURNSU4/);
  });

  it("refuse a plain-http server, over which kubectl would send no token", () => {
    assert.throws(
      () => readAdminCluster(configView("http://127.0.0.1:16443")),
      (e) => e instanceof InputError && /not https: kubectl sends a kubeconfig's token only over TLS/.test(e.message),
    );
  });

  it("refuse output without a cluster or that is not JSON", () => {
    assert.throws(() => readAdminCluster(JSON.stringify({ clusters: [] })), InputError);
    assert.throws(() => readAdminCluster("clusters: []"), InputError);
  });

  it("show a dry run the file's shape with placeholders, never a token", () => {
    const text = describeScopedKubeconfig(IDENTITY);
    assert.match(text, /token: "<the issued token: never printed>"/);
    assert.match(text, /namespace: ci/);
  });
});
