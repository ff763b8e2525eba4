// The API transport's exec session ends once killed even when its consumer stopped reading stdout mid-stream (the over-limit download).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { WebSocketServer, type WebSocket } from "ws";
import { ApiCluster } from "../../../src/cluster/api/api-cluster.js";
import type { ExecSession } from "../../../src/cluster/exec.js";
import { startScriptedApiServer } from "../../support/scripted-api-server.js";

const MiB = 1024 * 1024;
const frame = (channel: number, payload: Buffer): Buffer => Buffer.concat([Buffer.from([channel]), payload]);

let session: (ws: WebSocket) => void = () => undefined;
const wss = new WebSocketServer({
  noServer: true,
  perMessageDeflate: false,
  handleProtocols: () => "v5.channel.k8s.io",
});
const { server, client } = await startScriptedApiServer((_req, res) => void res.writeHead(404).end("{}"));
server.on("upgrade", (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => session(ws)));

/** Sends `total` bytes of stdout as fast as the socket takes them, then never ends: the pod still writing. */
function sendStdout(total: number): (ws: WebSocket) => void {
  return (ws) => {
    const chunk = frame(1, Buffer.alloc(64 * 1024, 0x61));
    for (let sent = 0; sent < total; sent += chunk.length - 1) ws.send(chunk);
  };
}

async function settlesWithin<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms)),
  );
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function openCatExec(signal?: AbortSignal): Promise<ExecSession> {
  const cluster = new ApiCluster(client);
  return cluster.exec({
    namespace: "ci",
    pod: "p",
    container: "run",
    command: ["pack-outputs"],
    stdin: { kind: "none" },
    ...(signal ? { signal } : {}),
  });
}

describe("an API exec whose consumer stopped reading", () => {
  it("ends failed once kill() is called after the consumer stopped reading a stdout the pod keeps sending", async () => {
    session = sendStdout(8 * MiB);
    const exec = await openCatExec();
    // Read a little, then stop for good, as the extractor does at the output limit.
    await new Promise<void>((resolve) => exec.stdout.once("data", () => (exec.stdout.pause(), resolve())));
    await new Promise((r) => setTimeout(r, 200)); // the socket fills and pauses
    exec.kill();
    const end = await settlesWithin(exec.ended, 3000, "exec.ended");
    assert.equal(end.kind, "failed");
    assert.equal(end.how, "stream cut");
  });

  it("ends failed once the request's signal aborts while stdout is unread", async () => {
    session = sendStdout(8 * MiB);
    const abort = new AbortController();
    const exec = await openCatExec(abort.signal);
    await new Promise((r) => setTimeout(r, 200));
    abort.abort();
    const end = await settlesWithin(exec.ended, 3000, "exec.ended");
    assert.equal(end.kind, "failed");
  });
});
