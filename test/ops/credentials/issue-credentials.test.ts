// Issuing and revoking through a scripted kubectl: the calls in order, the token only ever in the file, refusals typed, nothing touched on bad input.
import assert from "node:assert/strict";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { InputError } from "../../../src/core/errors.js";
import { issueCredentials } from "../../../src/ops/credentials/issue-credentials.js";
import { revokeCredentials } from "../../../src/ops/credentials/revoke-credentials.js";
import { ScriptedKubectl } from "../../support/scripted-kubectl.js";
import { makeTestTempDir } from "../../support/temp-dir.js";
import { isInfraError } from "../../support/infra-error.js";

const TOKEN = "lc1.the-secret-token-value";
const IDENTITY = { namespace: "ci", name: "knotless-runner" };
const TARGET = { kubeconfig: "/k/admin", context: "tenant", namespace: "ci" };
const VIEW = JSON.stringify({
  clusters: [{ name: "tenant", cluster: { server: "https://gw.example", "certificate-authority-data": "Q0E=" } }],
  users: [{ name: "admin", user: { token: "admin-secret" } }],
});
const APPLIED = (action: string): string =>
  `serviceaccount/knotless-runner ${action}\nrole.rbac.authorization.k8s.io/knotless-runner ${action}\nrolebinding.rbac.authorization.k8s.io/knotless-runner ${action}\n`;
const ANSWER = JSON.stringify({
  kind: "TokenRequest",
  status: { token: TOKEN, expirationTimestamp: new Date(Date.now() + 86_400_000).toISOString() },
});

function setUp(replies: { view?: object; apply?: object; token?: object } = {}) {
  const kubectl = new ScriptedKubectl()
    .on("config view", replies.view ?? { stdout: VIEW })
    .on("apply", replies.apply ?? { stdout: APPLIED("created") })
    .on("create --raw", replies.token ?? { stdout: ANSWER });
  const outFile = join(makeTestTempDir("issue-"), "runner.kubeconfig");
  return { kubectl, outFile, request: { target: TARGET, identity: IDENTITY, tokenSeconds: 86_400, outFile } };
}

describe("issueCredentials", () => {
  it("reads the admin kubeconfig, applies the objects, posts the TokenRequest on stdin and writes the kubeconfig 0600", async () => {
    const { kubectl, outFile, request } = setUp();
    const report = await issueCredentials(kubectl.cluster(TARGET), request);
    assert.deepEqual(
      kubectl.calls.map((c) => c.command.slice(0, 2)),
      [
        ["config", "view"],
        ["apply", "--request-timeout"],
        ["create", "--raw"],
      ],
    );
    assert.match(kubectl.calls[1]!.stdin ?? "", /kind: ServiceAccount[\s\S]*kind: Role[\s\S]*kind: RoleBinding/);
    assert.deepEqual(JSON.parse(kubectl.calls[2]!.stdin ?? ""), {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { expirationSeconds: 86_400 },
    });
    assert.equal(statSync(outFile).mode & 0o777, 0o600);
    const config = parse(readFileSync(outFile, "utf8"));
    assert.deepEqual(config.users, [{ name: "knotless-runner", user: { token: TOKEN } }]);
    assert.equal(config.clusters[0].cluster.server, "https://gw.example");
    assert.deepEqual(
      report.objects.map((o) => o.action),
      ["created", "created", "created"],
    );
    assert.ok(
      kubectl.calls.every((c) => !c.args.join(" ").includes(TOKEN)),
      "the token is in no argv",
    );
    assert.doesNotMatch(JSON.stringify(report), new RegExp(TOKEN));
  });

  it("reports objects that were already right as unchanged and still issues a fresh token", async () => {
    const { kubectl, request } = setUp({ apply: { stdout: APPLIED("unchanged") } });
    const report = await issueCredentials(kubectl.cluster(TARGET), request);
    assert.deepEqual(
      report.objects.map((o) => o.action),
      ["unchanged", "unchanged", "unchanged"],
    );
    assert.equal(kubectl.callsTo("create --raw").length, 1);
  });

  it("touches nothing when the admin kubeconfig points at plain http, or the file exists with loose permissions", async () => {
    const http = setUp({ view: { stdout: VIEW.replace("https://", "http://") } });
    await assert.rejects(issueCredentials(http.kubectl.cluster(TARGET), http.request), InputError);
    assert.deepEqual(
      http.kubectl.calls.map((c) => c.command[0]),
      ["config"],
    );
    const loose = setUp();
    writeFileSync(loose.outFile, "", { mode: 0o644 });
    await assert.rejects(issueCredentials(loose.kubectl.cluster(TARGET), loose.request), /mode 0644/);
    assert.equal(loose.kubectl.calls.length, 0);
  });

  it("makes a kubeconfig kubectl cannot use bad input", async () => {
    const { kubectl, request } = setUp({ view: { exitCode: 1, stderr: "error: cannot locate context nope\n" } });
    await assert.rejects(
      issueCredentials(kubectl.cluster(TARGET), request),
      (e) => e instanceof InputError && /cannot locate context nope/.test(e.message),
    );
  });

  it("fails with forbidden, naming what was applied before, when the admin may not create the Role", async () => {
    const stderr =
      'Error from server (Forbidden): error when creating "STDIN": roles.rbac.authorization.k8s.io is forbidden: User "someone" cannot create resource "roles"\n';
    const { kubectl, request, outFile } = setUp({
      apply: { exitCode: 1, stdout: "serviceaccount/knotless-runner created\n", stderr },
    });
    await assert.rejects(
      issueCredentials(kubectl.cluster(TARGET), request),
      isInfraError(
        "forbidden",
        /could not apply the credential's objects: .*cannot create resource "roles".*already applied: serviceaccount\/knotless-runner created/,
      ),
    );
    assert.equal(kubectl.callsTo("create --raw").length, 0);
    assert.throws(() => statSync(outFile));
  });

  it("fails with cluster-unreachable or credentials-failed on the TokenRequest, and writes no file", async () => {
    const down = setUp({
      token: {
        exitCode: 1,
        stderr: "Unable to connect to the server: dial tcp 10.0.0.1:443: connect: connection refused\n",
      },
    });
    await assert.rejects(
      issueCredentials(down.kubectl.cluster(TARGET), down.request),
      isInfraError("cluster-unreachable", /objects are in place: run credentials again/),
    );
    const invalid = setUp({
      token: {
        exitCode: 1,
        stderr: 'The TokenRequest "knotless-runner" is invalid: spec.expirationSeconds: Invalid value\n',
      },
    });
    await assert.rejects(
      issueCredentials(invalid.kubectl.cluster(TARGET), invalid.request),
      isInfraError("credentials-failed"),
    );
    assert.throws(() => statSync(invalid.outFile));
  });
});

describe("revokeCredentials", () => {
  it("deletes the binding, the role and the ServiceAccount, reports each, and removes the file", async () => {
    const kubectl = new ScriptedKubectl().on("delete", {
      stdout:
        'rolebinding.rbac.authorization.k8s.io "knotless-runner" deleted\nserviceaccount "knotless-runner" deleted\n',
    });
    const outFile = join(makeTestTempDir("revoke-"), "runner.kubeconfig");
    writeFileSync(outFile, "x", { mode: 0o600 });
    const report = await revokeCredentials(kubectl.cluster(TARGET), TARGET, IDENTITY, outFile);
    assert.deepEqual(report.objects, [
      { ref: "serviceaccount/knotless-runner", deleted: true },
      { ref: "role.rbac.authorization.k8s.io/knotless-runner", deleted: false },
      { ref: "rolebinding.rbac.authorization.k8s.io/knotless-runner", deleted: true },
    ]);
    assert.equal(report.removedFile, outFile);
    assert.throws(() => statSync(outFile));
    assert.ok(kubectl.calls[0]!.args.includes("--ignore-not-found"));
  });

  it("says nothing was there on a second revoke", async () => {
    const kubectl = new ScriptedKubectl().on("delete", { stdout: "" });
    const report = await revokeCredentials(kubectl.cluster(TARGET), TARGET, IDENTITY);
    assert.ok(report.objects.every((o) => !o.deleted));
  });
});
