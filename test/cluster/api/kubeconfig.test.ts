// Tests resolving a kubeconfig as kubectl reads it: merge order, contexts, TLS fields, each auth kind, refusals.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { loadKubeconfig } from "../../../src/cluster/api/load-kubeconfig.js";
import { ConfigError } from "../../../src/cluster/errors.js";
import { makeTestTempDir } from "../../support/temp-dir.js";

const dir = makeTestTempDir("knotless-api-kubeconfig-");
let count = 0;

function write(text: string, name = `config-${++count}.yaml`): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const b64 = (text: string): string => Buffer.from(text).toString("base64");

function config(user: string, cluster = "server: https://10.0.0.1:6443", extra = ""): string {
  return `apiVersion: v1
kind: Config
current-context: main
clusters:
  - name: c
    cluster:
      ${cluster}
users:
  - name: u
    user:
      ${user}
contexts:
  - name: main
    context: { cluster: c, user: u, namespace: team }
${extra}`;
}

async function assertRefused(files: string[], message: RegExp, explicit = false, context?: string): Promise<void> {
  await assert.rejects(loadKubeconfig({ files, explicit, ...(context ? { context } : {}) }), (error) => {
    assert.ok(error instanceof ConfigError, `not a ConfigError: ${String(error)}`);
    assert.match(error.message, message);
    return true;
  });
}

describe("kubeconfig resolution for the API transport", () => {
  it("takes the context's namespace, else default", async () => {
    const file = write(config("token: abc"));
    assert.equal((await loadKubeconfig({ files: [file], explicit: true })).namespace, "team");
    const bare = write(config("token: abc").replace(", namespace: team", ""));
    assert.equal((await loadKubeconfig({ files: [bare], explicit: true })).namespace, "default");
  });

  it("merges $KUBECONFIG files with the first file winning per name and for current-context", async () => {
    const first = write(`current-context: a
clusters:
  - name: c
    cluster: { server: "https://first:6443" }
contexts:
  - name: a
    context: { cluster: c, user: u }
`);
    const second = write(`current-context: b
clusters:
  - name: c
    cluster: { server: "https://second:6443" }
  - name: d
    cluster: { server: "https://d:6443" }
users:
  - name: u
    user: { token: from-second }
contexts:
  - name: a
    context: { cluster: d, user: u, namespace: ignored }
  - name: b
    context: { cluster: d, user: u }
`);
    const resolved = await loadKubeconfig({ files: [first, join(dir, "missing.yaml"), second], explicit: false });
    assert.equal(resolved.contextName, "a");
    assert.equal(resolved.server, "https://first:6443");
    assert.equal(resolved.namespace, "default");
    assert.deepEqual(resolved.auth, { kind: "token", token: "from-second" });
    const reversed = await loadKubeconfig({ files: [second, first], explicit: false });
    assert.equal(reversed.contextName, "b");
    assert.equal(reversed.server, "https://d:6443");
  });

  it("uses --context over current-context and refuses an unknown one", async () => {
    const file = write(
      config(
        "token: abc",
        undefined,
        `  - name: other
    context: { cluster: c, user: u, namespace: elsewhere }
`,
      ),
    );
    assert.equal((await loadKubeconfig({ files: [file], explicit: true, context: "other" })).namespace, "elsewhere");
    await assertRefused([file], /no context named "nope"/, true, "nope");
  });

  it("refuses a missing --kubeconfig but not a missing default file", async () => {
    await assertRefused([join(dir, "absent.yaml")], /cannot read the kubeconfig: ENOENT/, true);
    await assertRefused([join(dir, "absent.yaml")], /no context/, false);
  });

  it("reports a YAML error at its file and line", async () => {
    const file = write("apiVersion: v1\nclusters:\n  - name: [unclosed\n");
    await assertRefused([file], new RegExp(`${file}:\\d+: the kubeconfig is not valid YAML`), true);
  });

  it("reads certificate-authority-data, a relative certificate-authority path, tls-server-name and proxy-url", async () => {
    mkdirSync(join(dir, "certs"), { recursive: true });
    writeFileSync(join(dir, "certs", "ca.pem"), "CA FROM FILE");
    const withData = await loadKubeconfig({
      files: [
        write(
          config(
            "token: t",
            `server: https://h:6443\n      certificate-authority-data: ${b64("CA DATA")}\n      tls-server-name: api.internal\n      proxy-url: http://proxy:3128`,
          ),
        ),
      ],
      explicit: true,
    });
    assert.deepEqual(withData.tls, { ca: "CA DATA", insecureSkipVerify: false, serverName: "api.internal" });
    assert.equal(withData.proxyUrl, "http://proxy:3128");
    const withPath = await loadKubeconfig({
      files: [write(config("token: t", "server: https://h:6443\n      certificate-authority: certs/ca.pem"))],
      explicit: true,
    });
    assert.equal(withPath.tls.ca, "CA FROM FILE");
    const insecure = await loadKubeconfig({
      files: [write(config("token: t", "server: https://h:6443\n      insecure-skip-tls-verify: true"))],
      explicit: true,
    });
    assert.equal(insecure.tls.insecureSkipVerify, true);
  });

  it("refuses a socks proxy, naming --transport kubectl", async () => {
    await assertRefused(
      [write(config("token: t", "server: https://h:6443\n      proxy-url: socks5://p:1080"))],
      /--transport kubectl/,
      true,
    );
  });

  it("reads client-certificate-data and client-key-data, and client-certificate files", async () => {
    const data = await loadKubeconfig({
      files: [write(config(`client-certificate-data: ${b64("CERT")}\n      client-key-data: ${b64("KEY")}`))],
      explicit: true,
    });
    assert.equal(data.tls.cert, "CERT");
    assert.equal(data.tls.key, "KEY");
    assert.deepEqual(data.auth, { kind: "none" });
    writeFileSync(join(dir, "c.crt"), "CERT FILE");
    writeFileSync(join(dir, "c.key"), "KEY FILE");
    const files = await loadKubeconfig({
      files: [write(config("client-certificate: c.crt\n      client-key: c.key"))],
      explicit: true,
    });
    assert.equal(files.tls.cert, "CERT FILE");
    await assertRefused(
      [write(config(`client-certificate-data: ${b64("CERT")}`))],
      /client-certificate and client-key must be given together/,
      true,
    );
  });

  it("reads token, tokenFile (relative to the file), basic auth and an exec plugin", async () => {
    assert.deepEqual((await loadKubeconfig({ files: [write(config("token: abc"))], explicit: true })).auth, {
      kind: "token",
      token: "abc",
    });
    assert.deepEqual((await loadKubeconfig({ files: [write(config("tokenFile: tok"))], explicit: true })).auth, {
      kind: "token-file",
      path: join(dir, "tok"),
    });
    assert.deepEqual(
      (await loadKubeconfig({ files: [write(config("username: a\n      password: b"))], explicit: true })).auth,
      { kind: "basic", username: "a", password: "b" },
    );
    const exec = await loadKubeconfig({
      files: [
        write(
          config(
            "exec:\n        apiVersion: client.authentication.k8s.io/v1\n        command: ./plugin.sh\n        args: [get-token]\n        env: [{ name: A, value: b }]\n        provideClusterInfo: true\n        interactiveMode: Never",
          ),
        ),
      ],
      explicit: true,
    });
    assert.deepEqual(exec.auth, {
      kind: "exec",
      plugin: {
        apiVersion: "client.authentication.k8s.io/v1",
        command: join(dir, "plugin.sh"),
        args: ["get-token"],
        env: [{ name: "A", value: "b" }],
        provideClusterInfo: true,
        interactiveMode: "Never",
      },
    });
  });

  it("sends no credential to a plain-http server, as kubectl does", async () => {
    const resolved = await loadKubeconfig({
      files: [write(config("token: abc", "server: http://127.0.0.1:8080"))],
      explicit: true,
    });
    assert.deepEqual(resolved.auth, { kind: "none" });
  });

  it("refuses auth-provider and impersonation, naming --transport kubectl", async () => {
    await assertRefused(
      [write(config("auth-provider: { name: oidc }"))],
      /auth-provider plugins; use --transport kubectl/,
      true,
    );
    await assertRefused([write(config("token: t\n      as: someone"))], /impersonation; use --transport kubectl/, true);
    await assertRefused(
      [write(config("token: t\n      as-groups: [g]"))],
      /impersonation; use --transport kubectl/,
      true,
    );
  });

  it("refuses an exec plugin of an apiVersion it does not speak, and one that wants a terminal", async () => {
    await assertRefused(
      [write(config("exec:\n        apiVersion: client.authentication.k8s.io/v1alpha1\n        command: x"))],
      /v1alpha1.*--transport kubectl/,
      true,
    );
    await assertRefused(
      [
        write(
          config(
            "exec:\n        apiVersion: client.authentication.k8s.io/v1\n        command: x\n        interactiveMode: Always",
          ),
        ),
      ],
      /needs a terminal/,
      true,
    );
  });

  it("refuses a context whose cluster or user is not defined", async () => {
    await assertRefused(
      [write(config("token: t").replace("cluster: c, user: u", "cluster: gone, user: u"))],
      /cluster "gone", which the kubeconfig does not define/,
      true,
    );
    await assertRefused(
      [write(config("token: t").replace("cluster: c, user: u", "cluster: c, user: gone"))],
      /user "gone", which the kubeconfig does not define/,
      true,
    );
  });
});
