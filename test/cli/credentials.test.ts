// The credentials command's input: validated before the cluster is asked anything; --dry-run prints objects, API requests and kubectl calls and spawns nothing.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { InputError } from "../../src/core/errors.js";
import { resolveCredentialsCommand, type RawCredentialsOptions } from "../../src/cli/commands/credentials.js";
import { runCliInProcess } from "../support/run-cli.js";
import { makeTestTempDir } from "../support/temp-dir.js";

const RAW: RawCredentialsOptions = {
  namespace: "ci",
  name: "knotless-runner",
  duration: "24h",
  out: "/tmp/x.kubeconfig",
};

describe("resolveCredentialsCommand", () => {
  it("pins the namespace on every call and turns the duration into seconds", () => {
    const config = resolveCredentialsCommand({ ...RAW, context: "tenant" }, {});
    assert.deepEqual(config.target, { namespace: "ci", namespaceFromContext: false, context: "tenant" });
    assert.equal(config.tokenSeconds, 86_400);
    assert.deepEqual(config.identity, { namespace: "ci", name: "knotless-runner" });
    assert.equal(config.kubectlPath, "kubectl");
  });

  it("refuses a token under ten minutes, a fraction of a second, a bad name or namespace, and a missing --out", () => {
    const refuses = (raw: Partial<RawCredentialsOptions>, pattern: RegExp): void =>
      assert.throws(
        () => resolveCredentialsCommand({ ...RAW, ...raw }, {}),
        (e) => e instanceof InputError && pattern.test(e.message),
      );
    refuses({ duration: "9m" }, /--duration expects at least 10m/);
    refuses({ duration: "10m500ms" }, /whole seconds/);
    refuses({ duration: "200h" }, /at most 168h/);
    refuses({ name: "Runner_1" }, /--name expects a DNS-1123 label/);
    refuses({ namespace: "CI" }, /--namespace expects a DNS-1123 label/);
    refuses({ out: undefined }, /--out is required/);
    assert.equal(resolveCredentialsCommand({ ...RAW, out: undefined, revoke: true }, {}).outFile, undefined);
  });
});

describe("credentials through the CLI", () => {
  it("prints every object and call with --dry-run, the API requests first, and no token, spawning no kubectl", async () => {
    const out = join(makeTestTempDir("creds-cli-"), "runner.kubeconfig");
    const cli = await runCliInProcess([
      "credentials",
      "--namespace",
      "ci",
      "--out",
      out,
      "--dry-run",
      "--kubectl",
      "/nonexistent/kubectl",
      "--duration",
      "2h",
    ]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(
      cli.stdout,
      /kind: ServiceAccount[\s\S]*kind: Role[\s\S]*pods\/exec[\s\S]*kind: RoleBinding[\s\S]*expirationSeconds: 7200/,
    );
    assert.match(cli.stdout, /^# API requests, in order \(--transport api\)/m);
    const calls = cli.stdout.slice(cli.stdout.indexOf("# API requests"));
    assert.equal(
      calls,
      [
        "# API requests, in order (--transport api); beside each, as `#   kubectl:`, the kubectl command that does the same",
        "# reads the admin kubeconfig's server and CA (local; the admin's credentials in its output are not used)",
        "# (no request: the API transport does this in its own process)",
        "#   kubectl: /nonexistent/kubectl config view --raw --minify --flatten -o json",
        "# stdin: the ServiceAccount, Role and RoleBinding above (YAML)",
        "GET /api/v1/namespaces/ci/serviceaccounts/knotless-runner",
        "POST /api/v1/namespaces/ci/serviceaccounts (body: ServiceAccount; when it is absent)",
        "PUT /api/v1/namespaces/ci/serviceaccounts/knotless-runner (body: ServiceAccount (the one read, with the runner's fields); when it differs)",
        "GET /apis/rbac.authorization.k8s.io/v1/namespaces/ci/roles/knotless-runner",
        "POST /apis/rbac.authorization.k8s.io/v1/namespaces/ci/roles (body: Role; when it is absent)",
        "PUT /apis/rbac.authorization.k8s.io/v1/namespaces/ci/roles/knotless-runner (body: Role (the one read, with the runner's fields); when it differs)",
        "GET /apis/rbac.authorization.k8s.io/v1/namespaces/ci/rolebindings/knotless-runner",
        "POST /apis/rbac.authorization.k8s.io/v1/namespaces/ci/rolebindings (body: RoleBinding; when it is absent)",
        "PUT /apis/rbac.authorization.k8s.io/v1/namespaces/ci/rolebindings/knotless-runner (body: RoleBinding (the one read, with the runner's fields); when it differs)",
        "#   kubectl: /nonexistent/kubectl --namespace ci apply --request-timeout 30s -f -",
        `# stdin: the TokenRequest above (JSON); the token in its answer is kept in memory and written only to ${out}`,
        "POST /api/v1/namespaces/ci/serviceaccounts/knotless-runner/token (body: TokenRequest)",
        "#   kubectl: /nonexistent/kubectl create --raw /api/v1/namespaces/ci/serviceaccounts/knotless-runner/token --request-timeout 30s -f -",
        "",
      ].join("\n"),
    );
    assert.match(cli.stdout, /token: "<the issued token: never printed>"/);
  });

  it("prints the kubectl commands first with --transport kubectl, each with its API requests beside it", async () => {
    const out = join(makeTestTempDir("creds-cli-"), "runner.kubeconfig");
    const cli = await runCliInProcess([
      "credentials",
      "--namespace",
      "ci",
      "--out",
      out,
      "--dry-run",
      "--kubectl",
      "/nonexistent/kubectl",
      "--transport",
      "kubectl",
    ]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(
      cli.stdout,
      /^\/nonexistent\/kubectl config view --raw --minify --flatten -o json\n# {3}api: no request \(done in the runner's own process\)$/m,
    );
    assert.match(
      cli.stdout,
      /^\/nonexistent\/kubectl --namespace ci apply --request-timeout 30s -f -\n# {3}api: GET \/api\/v1\/namespaces\/ci\/serviceaccounts\/knotless-runner\n/m,
    );
    assert.match(
      cli.stdout,
      /^\/nonexistent\/kubectl create --raw \/api\/v1\/namespaces\/ci\/serviceaccounts\/knotless-runner\/token --request-timeout 30s -f -\n# {3}api: POST \/api\/v1\/namespaces\/ci\/serviceaccounts\/knotless-runner\/token \(body: TokenRequest\)$/m,
    );
  });

  it("prints the revoke's requests and call with --revoke --dry-run, in each transport's order", async () => {
    const api = await runCliInProcess([
      "credentials",
      "--namespace",
      "ci",
      "--revoke",
      "--dry-run",
      "--kubectl",
      "kubectl",
    ]);
    assert.equal(api.code, 0, api.stderr);
    const deletes = [
      "DELETE /apis/rbac.authorization.k8s.io/v1/namespaces/ci/rolebindings/knotless-runner",
      "DELETE /apis/rbac.authorization.k8s.io/v1/namespaces/ci/roles/knotless-runner",
      "DELETE /api/v1/namespaces/ci/serviceaccounts/knotless-runner",
    ];
    const command =
      "kubectl --namespace ci delete rolebinding.rbac.authorization.k8s.io/knotless-runner role.rbac.authorization.k8s.io/knotless-runner serviceaccount/knotless-runner --ignore-not-found --wait=false --request-timeout 30s";
    assert.ok(api.stdout.endsWith(`${[...deletes, `#   kubectl: ${command}`].join("\n")}\n`), api.stdout);
    const kubectl = await runCliInProcess([
      "credentials",
      "--namespace",
      "ci",
      "--revoke",
      "--dry-run",
      "--kubectl",
      "kubectl",
      "--transport",
      "kubectl",
    ]);
    assert.equal(kubectl.code, 0, kubectl.stderr);
    assert.ok(
      kubectl.stdout.endsWith(`${[command, ...deletes.map((d) => `#   api: ${d}`)].join("\n")}\n`),
      kubectl.stdout,
    );
  });

  it("exits 2 without a kubectl call when --out exists with looser permissions", async () => {
    const out = join(makeTestTempDir("creds-cli-"), "runner.kubeconfig");
    writeFileSync(out, "", { mode: 0o644 });
    const cli = await runCliInProcess([
      "credentials",
      "--namespace",
      "ci",
      "--out",
      out,
      "--kubectl",
      "/nonexistent/kubectl",
    ]);
    assert.equal(cli.code, 2);
    assert.match(cli.stderr, /exists with mode 0644/);
  });

  it("exits 2 when --namespace is missing", async () => {
    const cli = await runCliInProcess(["credentials", "--out", "/tmp/x"]);
    assert.equal(cli.code, 2);
    assert.match(cli.stderr, /--namespace/);
  });
});
