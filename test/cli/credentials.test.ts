// The credentials command's input: validated before the cluster is asked anything; --dry-run prints objects and calls and spawns nothing.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { InputError } from "../../src/errors.js";
import { resolveCredentialsConfig, type RawCredentialsOptions } from "../../src/cli/commands/credentials.js";
import { runCli } from "../support/run-cli.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const RAW: RawCredentialsOptions = { namespace: "ci", name: "knotless-runner", duration: "24h", out: "/tmp/x.kubeconfig" };

describe("resolveCredentialsConfig", () => {
  it("pins the namespace on every call and turns the duration into seconds", () => {
    const config = resolveCredentialsConfig({ ...RAW, context: "tenant" }, {});
    assert.deepEqual(config.target, { namespace: "ci", namespaceFromContext: false, context: "tenant" });
    assert.equal(config.tokenSeconds, 86_400);
    assert.deepEqual(config.identity, { namespace: "ci", name: "knotless-runner" });
    assert.equal(config.kubectlPath, "kubectl");
  });

  it("refuses a token under ten minutes, a fraction of a second, a bad name or namespace, and a missing --out", () => {
    const refuses = (raw: Partial<RawCredentialsOptions>, pattern: RegExp): void => assert.throws(() => resolveCredentialsConfig({ ...RAW, ...raw }, {}), (e) => e instanceof InputError && pattern.test(e.message));
    refuses({ duration: "9m" }, /--duration expects at least 10m/);
    refuses({ duration: "10m500ms" }, /whole seconds/);
    refuses({ duration: "200h" }, /at most 168h/);
    refuses({ name: "Runner_1" }, /--name expects a DNS-1123 label/);
    refuses({ namespace: "CI" }, /--namespace expects a DNS-1123 label/);
    refuses({ out: undefined }, /--out is required/);
    assert.equal(resolveCredentialsConfig({ ...RAW, out: undefined, revoke: true }, {}).outFile, undefined);
  });
});

describe("credentials through the CLI", () => {
  it("prints every object and call with --dry-run, and no token, spawning no kubectl", async () => {
    const out = join(makeTestTempDir("creds-cli-"), "runner.kubeconfig");
    const cli = await runCli(["credentials", "--namespace", "ci", "--out", out, "--dry-run", "--kubectl", "/nonexistent/kubectl", "--duration", "2h"]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /kind: ServiceAccount[\s\S]*kind: Role[\s\S]*pods\/exec[\s\S]*kind: RoleBinding[\s\S]*expirationSeconds: 7200/);
    assert.match(cli.stdout, /^\/nonexistent\/kubectl config view --raw --minify --flatten -o json$/m);
    assert.match(cli.stdout, /^\/nonexistent\/kubectl --namespace ci apply --request-timeout 30s -f -$/m);
    assert.match(cli.stdout, /^\/nonexistent\/kubectl create --raw \/api\/v1\/namespaces\/ci\/serviceaccounts\/knotless-runner\/token --request-timeout 30s -f -$/m);
    assert.match(cli.stdout, /token: "<the issued token: never printed>"/);
  });

  it("prints the revoke's call with --revoke --dry-run", async () => {
    const cli = await runCli(["credentials", "--namespace", "ci", "--revoke", "--dry-run", "--kubectl", "kubectl"]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /^kubectl --namespace ci delete rolebinding\.rbac\.authorization\.k8s\.io\/knotless-runner role\.rbac\.authorization\.k8s\.io\/knotless-runner serviceaccount\/knotless-runner --ignore-not-found/m);
  });

  it("exits 2 without a kubectl call when --out exists with looser permissions", async () => {
    const out = join(makeTestTempDir("creds-cli-"), "runner.kubeconfig");
    writeFileSync(out, "", { mode: 0o644 });
    const cli = await runCli(["credentials", "--namespace", "ci", "--out", out, "--kubectl", "/nonexistent/kubectl"]);
    assert.equal(cli.code, 2);
    assert.match(cli.stderr, /exists with mode 0644/);
  });

  it("exits 2 when --namespace is missing", async () => {
    const cli = await runCli(["credentials", "--out", "/tmp/x"]);
    assert.equal(cli.code, 2);
    assert.match(cli.stderr, /--namespace/);
  });
});
