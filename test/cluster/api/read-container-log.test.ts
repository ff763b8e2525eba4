// Tests the API transport's readContainerLog against a small in-test server: the request it makes and the byte bound it keeps.
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { after, describe, it } from "node:test";
import { ApiClient } from "../../../src/cluster/api/api-client.js";
import { ApiCluster } from "../../../src/cluster/api/api-cluster.js";
import { ForbiddenError } from "../../../src/cluster/errors.js";
import type { ResolvedKubeconfig } from "../../../src/cluster/api/kubeconfig.js";

let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end("");
const server = createServer((req, res) => handler(req, res));
server.listen(0, "127.0.0.1");
await once(server, "listening");
const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
after(() => {
  server.closeAllConnections();
  server.close();
});

const kubeconfig: ResolvedKubeconfig = {
  contextName: "x",
  namespace: "ci",
  server: base,
  tls: { insecureSkipVerify: false },
  clusterName: "c",
  userName: "u",
  auth: { kind: "token", token: "tok" },
};

describe("ApiCluster.readContainerLog", () => {
  it("asks GET pods/log for the container's last lines with the byte bound, and returns the text", async () => {
    let url = "";
    handler = (req, res) => {
      url = req.url ?? "";
      res.end("LOG: ready\n");
    };
    const client = new ApiClient({ kubeconfig, env: {} });
    const text = await new ApiCluster(client).readContainerLog("ci", "pod-1", "postgres", {
      tailLines: 20,
      limitBytes: 4096,
    });
    assert.equal(text, "LOG: ready\n");
    assert.equal(url, "/api/v1/namespaces/ci/pods/pod-1/log?container=postgres&tailLines=20&limitBytes=4096");
    await client.close();
  });

  it("stops reading at the byte bound when the server sends more, without waiting for the body's end", async () => {
    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      const line = Buffer.alloc(1024, "x");
      const timer = setInterval(() => res.write(line), 1);
      res.on("close", () => clearInterval(timer));
    };
    const client = new ApiClient({ kubeconfig, env: {} });
    const text = await new ApiCluster(client).readContainerLog("ci", "pod-1", "noisy", {
      tailLines: 50,
      limitBytes: 16_384,
    });
    assert.equal(text.length, 16_384);
    await client.close();
  });

  it("throws the typed error of a refusal (403 on pods/log)", async () => {
    handler = (_req, res) => {
      res.writeHead(403, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          kind: "Status",
          apiVersion: "v1",
          status: "Failure",
          reason: "Forbidden",
          message: 'pods "pod-1" is forbidden: cannot get resource "pods/log"',
          code: 403,
        }),
      );
    };
    const client = new ApiClient({ kubeconfig, env: {} });
    await assert.rejects(
      new ApiCluster(client).readContainerLog("ci", "pod-1", "postgres", { tailLines: 20, limitBytes: 4096 }),
      (error: unknown) => error instanceof ForbiddenError,
    );
    await client.close();
  });
});
