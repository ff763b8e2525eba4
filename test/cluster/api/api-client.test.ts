// Tests the API client against a small in-test server: pooled connections, Status mapped to kinds, 401 refresh, timeouts.
import assert from "node:assert/strict";
import { chmodSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { once } from "node:events";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { ApiClient, type ApiCall } from "../../../src/cluster/api/api-client.js";
import {
  ClusterError,
  ForbiddenError,
  TimeoutError,
  UnauthorizedError,
  UnavailableError,
  type ClusterErrorCode,
} from "../../../src/cluster/errors.js";
import type { ResolvedKubeconfig, UserAuth } from "../../../src/cluster/api/kubeconfig.js";
import { startConnectProxy } from "../../support/connect-proxy.js";
import { makeTestTempDir } from "../../support/temp-dir.js";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let handler: Handler = (_req, res) => res.end("{}");
let connections = 0;
const seen: IncomingMessage[] = [];
const server = createServer((req, res) => {
  seen.push(req);
  handler(req, res);
});
server.on("connection", () => connections++);
server.listen(0, "127.0.0.1");
await once(server, "listening");
const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
after(() => {
  server.closeAllConnections();
  server.close();
});

function kubeconfig(auth: UserAuth = { kind: "token", token: "tok" }): ResolvedKubeconfig {
  return {
    contextName: "x",
    namespace: "ci",
    server: base,
    tls: { insecureSkipVerify: false },
    clusterName: "c",
    userName: "u",
    auth,
  };
}

function status(res: ServerResponse, code: number, reason: string, message: string): void {
  res.writeHead(code, { "content-type": "application/json" });
  res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", reason, message, code }));
}

const GET = { verb: "get", resource: "jobs.batch" };

describe("the API client", () => {
  it("reuses one keep-alive connection for sequential requests and sends the bearer token", async () => {
    handler = (_req, res) => res.end(JSON.stringify({ kind: "Job" }));
    const client = new ApiClient({ kubeconfig: kubeconfig(), env: {} });
    const before = connections;
    for (let i = 0; i < 10; i++)
      assert.deepEqual(await client.request("GET", "/apis/batch/v1/namespaces/ci/jobs/j", GET), { kind: "Job" });
    assert.equal(connections - before, 1);
    assert.equal(seen.at(-1)!.headers.authorization, "Bearer tok");
    await client.close();
  });

  it("sends query parameters and a JSON body with its content type", async () => {
    let body = "";
    handler = (req, res) => {
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => res.end("{}"));
    };
    const client = new ApiClient({ kubeconfig: kubeconfig(), env: {} });
    await client.request("PATCH", "/apis/batch/v1/namespaces/ci/jobs/j", {
      ...GET,
      verb: "patch",
      query: { fieldManager: "knotless", dryRun: undefined },
      body: { a: 1 },
      contentType: "application/merge-patch+json",
    });
    assert.equal(seen.at(-1)!.url, "/apis/batch/v1/namespaces/ci/jobs/j?fieldManager=knotless");
    assert.equal(seen.at(-1)!.headers["content-type"], "application/merge-patch+json");
    assert.equal(body, '{"a":1}');
    await client.close();
  });

  it("maps each Status to its kind, naming the verb and resource of a 403", async () => {
    const client = new ApiClient({ kubeconfig: kubeconfig(), env: {} });
    const cases: Array<[number, string, ClusterErrorCode]> = [
      [404, "NotFound", "not-found"],
      [409, "AlreadyExists", "already-exists"],
      [409, "Conflict", "conflict"],
      [403, "Forbidden", "forbidden"],
      [422, "Invalid", "invalid"],
      [500, "InternalError", "unavailable"],
      [503, "ServiceUnavailable", "unavailable"],
      [429, "TooManyRequests", "unavailable"],
      [504, "Timeout", "timeout"],
    ];
    for (const [code, reason, kind] of cases) {
      handler = (_req, res) => status(res, code, reason, `said ${reason}`);
      await assert.rejects(client.request("GET", "/x", GET), (error) => {
        assert.ok(error instanceof ClusterError);
        assert.equal(error.code, kind, `${code} ${reason}`);
        assert.equal(error.message, `said ${reason}`);
        if (error instanceof ForbiddenError) assert.deepEqual([error.verb, error.resource], ["get", "jobs.batch"]);
        return true;
      });
    }
    await client.close();
  });

  it("runs the exec plugin again after a 401 and retries once with the new token", async () => {
    const dir = makeTestTempDir("knotless-api-client-");
    const plugin = join(dir, "plugin.sh");
    const counter = join(dir, "n");
    writeFileSync(counter, "0");
    writeFileSync(
      plugin,
      `#!/bin/sh\nn=$(($(cat ${counter}) + 1)); echo $n > ${counter}\nprintf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"tok-%s"}}' $n\n`,
    );
    chmodSync(plugin, 0o755);
    handler = (req, res) =>
      req.headers.authorization === "Bearer tok-2"
        ? res.end('{"ok":true}')
        : status(res, 401, "Unauthorized", "Unauthorized");
    const auth: UserAuth = {
      kind: "exec",
      plugin: {
        apiVersion: "client.authentication.k8s.io/v1",
        command: plugin,
        args: [],
        env: [],
        provideClusterInfo: false,
      },
    };
    const client = new ApiClient({ kubeconfig: kubeconfig(auth), env: { PATH: "/usr/bin:/bin" } });
    assert.deepEqual(await client.request("GET", "/x", GET), { ok: true });
    handler = (_req, res) => status(res, 401, "Unauthorized", "Unauthorized");
    await assert.rejects(client.request("GET", "/x", GET), (error) => error instanceof UnauthorizedError);
    await client.close();
  });

  it("gives up on a request without an answer after its timeout", async () => {
    handler = () => undefined; // never answers
    const client = new ApiClient({ kubeconfig: kubeconfig(), env: {} });
    const started = Date.now();
    await assert.rejects(
      client.request("GET", "/slow", { ...GET, timeoutMs: 200 }),
      (error) => error instanceof TimeoutError,
    );
    assert.ok(Date.now() - started < 20_000, "gave up at the 200 ms timeout, not never"); // a bound a busy machine keeps
    await client.close();
  });

  it("sends requests through a CONNECT tunnel of the kubeconfig's proxy-url, reusing the tunnel", async () => {
    const { server: proxy, url: proxyUrl, tunnels } = await startConnectProxy();
    handler = (_req, res) => res.end('{"through":"proxy"}');
    const client = new ApiClient({ kubeconfig: { ...kubeconfig(), proxyUrl }, env: {} });
    for (let i = 0; i < 3; i++) assert.deepEqual(await client.request("GET", "/x", GET), { through: "proxy" });
    assert.deepEqual(tunnels, [new URL(base).host]);
    await client.close();
    proxy.close();
  });

  it("reports a refused connection as unavailable (unreachable), in the words kubectl uses too", async () => {
    const closed = createServer();
    closed.listen(0, "127.0.0.1");
    await once(closed, "listening");
    const port = (closed.address() as { port: number }).port;
    closed.close();
    const client = new ApiClient({ kubeconfig: { ...kubeconfig(), server: `http://127.0.0.1:${port}` }, env: {} });
    await assert.rejects(
      client.request("GET", "/x", GET),
      (error) =>
        error instanceof UnavailableError &&
        error.reason === "unreachable" &&
        /ECONNREFUSED 127\.0\.0\.1:\d+ \(connection refused\)$/.test(error.message),
    );
    await client.close();
  });

  it("tells onCall of every request (method, path with query, status, duration) and never of a header or body", async () => {
    const calls: ApiCall[] = [];
    const dir = makeTestTempDir("knotless-api-client-");
    const plugin = join(dir, "plugin.sh");
    const counter = join(dir, "n");
    writeFileSync(counter, "0");
    writeFileSync(
      plugin,
      `#!/bin/sh\nn=$(($(cat ${counter}) + 1)); echo $n > ${counter}\nprintf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"SECRET-TOKEN-%s"}}' $n\n`,
    );
    chmodSync(plugin, 0o755);
    const auth: UserAuth = {
      kind: "exec",
      plugin: {
        apiVersion: "client.authentication.k8s.io/v1",
        command: plugin,
        args: [],
        env: [],
        provideClusterInfo: false,
      },
    };
    const client = new ApiClient({
      kubeconfig: kubeconfig(auth),
      env: { PATH: "/usr/bin:/bin" },
      onCall: (call) => calls.push(call),
    });
    handler = (req, res) => {
      req.resume();
      if (req.headers.authorization !== "Bearer SECRET-TOKEN-2")
        return status(res, 401, "Unauthorized", "Unauthorized");
      res.writeHead(req.method === "POST" ? 201 : 200, { "content-type": "application/json" });
      res.end(JSON.stringify({ kind: "Secret", data: { token: "SECRET-IN-ANSWER" } }));
    };
    await client.request("POST", "/api/v1/namespaces/ci/serviceaccounts/sa/token", {
      verb: "create",
      resource: "serviceaccounts/token",
      query: { fieldValidation: "Strict" },
      body: { spec: { secret: "SECRET-IN-BODY" } },
    });
    handler = (_req, res) => status(res, 404, "NotFound", "gone");
    await assert.rejects(
      client.request("GET", "/apis/batch/v1/namespaces/ci/jobs", { ...GET, query: { labelSelector: "a=b" } }),
    );
    await client.close();
    assert.deepEqual(
      calls.map(({ method, path, status: code }) => [method, path, code]),
      [
        ["POST", "/api/v1/namespaces/ci/serviceaccounts/sa/token?fieldValidation=Strict", 401], // refused, the plugin runs again
        ["POST", "/api/v1/namespaces/ci/serviceaccounts/sa/token?fieldValidation=Strict", 201],
        ["GET", "/apis/batch/v1/namespaces/ci/jobs?labelSelector=a%3Db", 404],
      ],
    );
    for (const call of calls) assert.ok(Number.isInteger(call.durationMs) && call.durationMs >= 0);
    assert.doesNotMatch(JSON.stringify(calls), /SECRET|Bearer/);
  });

  it("tells onCall of a request that got no answer with a null status", async () => {
    const closed = createServer();
    closed.listen(0, "127.0.0.1");
    await once(closed, "listening");
    const port = (closed.address() as { port: number }).port;
    closed.close();
    const calls: ApiCall[] = [];
    const client = new ApiClient({
      kubeconfig: { ...kubeconfig(), server: `http://127.0.0.1:${port}` },
      env: {},
      onCall: (call) => calls.push(call),
    });
    await assert.rejects(client.request("DELETE", "/apis/batch/v1/namespaces/ci/jobs/j", { ...GET, verb: "delete" }));
    assert.deepEqual(
      calls.map(({ method, path, status: code }) => [method, path, code]),
      [["DELETE", "/apis/batch/v1/namespaces/ci/jobs/j", null]],
    );
    await client.close();
  });
});
