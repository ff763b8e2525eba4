// Tests exec framing over v5.channel.k8s.io against a small in-test WebSocket server: exit codes, half-close, cuts, backpressure.
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { after, describe, it } from "node:test";
import { WebSocketServer, type WebSocket } from "ws";
import { openExecSocket, type ExecSocketOptions } from "../../../src/cluster/api/exec-socket.js";
import { ClusterError, CutStreamError, ForbiddenError, UnavailableError } from "../../../src/cluster/errors.js";
import { startConnectProxy } from "../../support/connect-proxy.js";

type Session = (ws: WebSocket, req: IncomingMessage) => void;
let session: Session = () => undefined;
let upgrade: ((req: IncomingMessage, socket: Duplex, head: Buffer) => boolean) | undefined;
let chooseProtocol = (offered: Set<string>): string | false =>
  offered.has("v5.channel.k8s.io") ? "v5.channel.k8s.io" : false;
const wss = new WebSocketServer({
  noServer: true,
  perMessageDeflate: false,
  handleProtocols: (p) => chooseProtocol(p),
});
const server = createServer();
server.on("upgrade", (req, socket, head) => {
  if (upgrade?.(req, socket, head)) return;
  wss.handleUpgrade(req, socket, head, (ws) => session(ws, req));
});
server.listen(0, "127.0.0.1");
await once(server, "listening");
const url = `ws://127.0.0.1:${(server.address() as { port: number }).port}/api/v1/namespaces/ci/pods/p/exec?command=sh`;
after(() => {
  for (const ws of wss.clients) ws.terminate();
  server.closeAllConnections();
  server.close();
});

const MiB = 1024 * 1024;
const target = { url, headers: {}, tls: { rejectUnauthorized: true } };
const frame = (channel: number, payload: string | Buffer): Buffer =>
  Buffer.concat([Buffer.from([channel]), Buffer.from(payload)]);
const exitStatus = (code: number): Buffer =>
  frame(
    3,
    JSON.stringify(
      code === 0
        ? { metadata: {}, status: "Success" }
        : {
            metadata: {},
            status: "Failure",
            reason: "NonZeroExitCode",
            details: { causes: [{ reason: "ExitCode", message: String(code) }] },
          },
    ),
  );

async function readAll(stream: Readable): Promise<string> {
  let text = "";
  for await (const chunk of stream) text += (chunk as Buffer).toString();
  return text;
}

async function open(options: Partial<ExecSocketOptions> = {}) {
  return openExecSocket(target, { stdin: null, ...options });
}

describe("exec over WebSocket v5.channel.k8s.io", () => {
  it("reads stdout, stderr and exit code 7 from the Status frame", async () => {
    session = (ws) => {
      ws.send(frame(1, "out"));
      ws.send(frame(2, "err"));
      ws.send(exitStatus(7));
      ws.close(1000);
    };
    const exec = await open();
    const [out, err, end] = await Promise.all([readAll(exec.stdout), readAll(exec.stderr), exec.ended]);
    assert.deepEqual([out, err, end], ["out", "err", { kind: "exit", code: 7 }]);
  });

  it("ends exit 0 on a Success status", async () => {
    session = (ws) => {
      ws.send(exitStatus(0));
      ws.close(1000);
    };
    const exec = await open();
    exec.stdout.resume();
    assert.deepEqual(await exec.ended, { kind: "exit", code: 0 });
  });

  it("offers only v5.channel.k8s.io", async () => {
    let offered = "";
    session = (ws, req) => {
      offered = String(req.headers["sec-websocket-protocol"]);
      ws.send(exitStatus(0));
      ws.close(1000);
    };
    const exec = await open();
    exec.stdout.resume();
    await exec.ended;
    assert.equal(offered, "v5.channel.k8s.io");
  });

  it("half-closes stdin with [255, 0] while stdout keeps flowing", async () => {
    const received: Buffer[] = [];
    session = (ws) => {
      ws.on("message", (data: Buffer) => {
        received.push(Buffer.from(data));
        if (data[0] === 255) {
          ws.send(frame(1, "after close"));
          ws.send(exitStatus(0));
          ws.close(1000);
        }
      });
    };
    const exec = await open({ stdin: "pipe" });
    exec.stdin!.write("abc");
    exec.stdin!.end();
    assert.equal(await readAll(exec.stdout), "after close");
    assert.deepEqual(await exec.ended, { kind: "exit", code: 0 });
    assert.deepEqual(received, [frame(0, "abc"), Buffer.from([255, 0])]);
  });

  it("ends failed with CutStreamError when the socket closes without a status, even a clean close", async () => {
    for (const close of [(ws: WebSocket) => ws.close(1000), (ws: WebSocket) => ws.terminate()]) {
      session = (ws) => {
        ws.send(frame(1, "partial"));
        setTimeout(() => close(ws), 20);
      };
      const exec = await open();
      assert.equal(await readAll(exec.stdout), "partial");
      const end = await exec.ended;
      assert.equal(end.kind, "failed");
      assert.ok(
        end.kind === "failed" && end.error instanceof CutStreamError,
        String(end.kind === "failed" && end.error),
      );
    }
  });

  it("ends with the exit Status within the close grace when the server then stops reading and never closes", async () => {
    session = (ws) => {
      ws.send(frame(1, "out"));
      ws.send(exitStatus(4));
      ws.close(1000);
      (ws as unknown as { _socket: Duplex })._socket.pause(); // the client's close reply is never read
    };
    const exec = await open({ closeGraceMs: 100 });
    const started = Date.now();
    const [out, end] = await Promise.all([readAll(exec.stdout), exec.ended]);
    assert.deepEqual([out, end], ["out", { kind: "exit", code: 4 }]);
    // 20 s: far below ws's own close timeout (30 s), far above what a busy machine adds to the 100 ms grace.
    assert.ok(Date.now() - started < 20_000, `ended after ${Date.now() - started} ms (ws's own close timeout is 30 s)`);
  });

  it("ends failed with CutStreamError when kill() drops the socket", async () => {
    session = () => undefined;
    const exec = await open();
    exec.stdout.resume();
    await new Promise((r) => setTimeout(r, 50));
    exec.kill();
    const end = await exec.ended;
    assert.ok(
      end.kind === "failed" && end.error instanceof CutStreamError && /ended by the runner/.test(end.error.message),
    );
  });

  it("takes a socket silent past the read deadline (no pong) as cut", async () => {
    session = (ws) => (ws as unknown as { _socket: Duplex })._socket.pause(); // reads nothing: no pong
    const exec = await open({ pingIntervalMs: 50, readDeadlineMs: 300 });
    exec.stdout.resume();
    const started = Date.now();
    const end = await exec.ended;
    assert.ok(
      end.kind === "failed" && end.error instanceof CutStreamError && /silent/.test(end.error.message),
      String(end.kind === "failed" && end.error.message),
    );
    assert.ok(Date.now() - started < 20_000, "cut at the 300 ms read deadline, not never"); // a bound a busy machine keeps
  });

  it("tells onAnswer the upgrade's status once: 101 when taken, the refusal's code otherwise", async () => {
    session = (ws) => {
      ws.send(exitStatus(0));
      ws.close(1000);
    };
    const answers: Array<number | null> = [];
    await (
      await open({ onAnswer: (status) => answers.push(status) })
    ).ended;
    upgrade = (_req: IncomingMessage, socket: Duplex): boolean => {
      socket.end("HTTP/1.1 403 X\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
      return true;
    };
    await (
      await open({ onAnswer: (status) => answers.push(status) })
    ).ended;
    upgrade = undefined;
    assert.deepEqual(answers, [101, 403]);
  });

  it("types a refused upgrade: 403 Forbidden, 500 as exec-not-ready", async () => {
    const refuse =
      (code: number, body: object) =>
      (_req: IncomingMessage, socket: Duplex): boolean => {
        const text = JSON.stringify(body);
        socket.end(
          `HTTP/1.1 ${code} X\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
        );
        return true;
      };
    upgrade = refuse(403, {
      kind: "Status",
      reason: "Forbidden",
      message: 'pods "p" is forbidden: cannot create resource "pods/exec"',
    });
    let end = await (await open()).ended;
    assert.ok(end.kind === "failed" && end.error instanceof ForbiddenError && end.error.resource === "pods/exec");
    upgrade = refuse(500, {
      kind: "Status",
      reason: "InternalError",
      message: "error dialing backend: dial tcp: connection refused",
    });
    end = await (await open()).ended;
    assert.ok(
      end.kind === "failed" &&
        end.error instanceof UnavailableError &&
        end.error.reason === "exec-not-ready" &&
        /error dialing backend/.test(end.error.message),
    );
    upgrade = undefined;
  });

  it("names --transport kubectl when the server does not choose v5", async () => {
    chooseProtocol = () => false;
    session = (ws) => ws.close(1000);
    const end = await (await open()).ended;
    chooseProtocol = (offered) => (offered.has("v5.channel.k8s.io") ? "v5.channel.k8s.io" : false);
    assert.ok(
      end.kind === "failed" && end.error instanceof ClusterError && /--transport kubectl/.test(end.error.message),
      String(end.kind === "failed" && end.error.message),
    );
  });

  it("goes through a CONNECT tunnel of the kubeconfig's proxy-url, and reports a refused tunnel as unreachable", async () => {
    const { server: proxy, url: proxyUrl, tunnels } = await startConnectProxy();
    session = (ws) => {
      ws.send(frame(1, "via proxy"));
      ws.send(exitStatus(0));
      ws.close(1000);
    };
    const exec = await openExecSocket({ ...target, proxyUrl }, { stdin: null });
    assert.equal(await readAll(exec.stdout), "via proxy");
    assert.deepEqual(await exec.ended, { kind: "exit", code: 0 });
    assert.deepEqual(tunnels, [new URL(url).host]);
    proxy.removeAllListeners("connect");
    proxy.on("connect", (_req: IncomingMessage, client: Duplex) =>
      client.end("HTTP/1.1 407 Proxy Authentication Required\r\n\r\n"),
    );
    const refused = await (await openExecSocket({ ...target, proxyUrl }, { stdin: null })).ended;
    assert.ok(
      refused.kind === "failed" &&
        refused.error instanceof UnavailableError &&
        refused.error.reason === "unreachable" &&
        /HTTP 407/.test(refused.error.message),
      String(refused.kind === "failed" && refused.error.message),
    );
    proxy.close();
  });

  it("pauses the socket while a slow stdout consumer is full: what is buffered stays bounded", async () => {
    const total = 48 * MiB;
    let acknowledged = 0;
    session = (ws) => {
      const chunk = frame(1, Buffer.alloc(256 * 1024, 0x61));
      let sent = 0;
      let inFlight = 0;
      const pump = (): void => {
        while (inFlight < 4 && sent < total) {
          sent += chunk.length - 1;
          inFlight++;
          ws.send(chunk, () => {
            inFlight--;
            acknowledged += chunk.length - 1;
            pump();
          });
        }
        if (sent >= total && inFlight === 0) {
          ws.send(exitStatus(0));
          ws.close(1000);
        }
      };
      pump();
    };
    const exec = await open({ readHighWaterMark: MiB });
    let consumed = 0;
    let maxAhead = 0;
    // Takes ~25 MiB/s for the first third, as a slow disk would, then everything at once.
    const slow = new Writable({
      highWaterMark: 64 * 1024,
      write(chunk: Buffer, _encoding, done) {
        consumed += chunk.length;
        maxAhead = Math.max(maxAhead, acknowledged - consumed);
        if (consumed < 16 * MiB) setTimeout(done, (chunk.length / (25 * MiB)) * 1000);
        else done();
      },
    });
    await pipeline(exec.stdout, slow);
    assert.equal(consumed, total);
    assert.deepEqual(await exec.ended, { kind: "exit", code: 0 });
    assert.ok(maxAhead < 16 * MiB, `the server got ${(maxAhead / MiB).toFixed(1)} MiB ahead of the consumer`);
  });

  it("reads a stdin stream only as fast as the server takes it: what is buffered stays bounded", async () => {
    const total = 32 * MiB;
    let received = 0;
    session = (ws) => {
      ws.on("message", (data: Buffer) => {
        if (data[0] === 0) {
          received += data.length - 1;
          ws.pause();
          setTimeout(() => ws.resume(), 3);
        } else if (data[0] === 255) {
          ws.send(exitStatus(0));
          ws.close(1000);
        }
      });
    };
    let produced = 0;
    let maxAhead = 0;
    const source = new Readable({
      read() {
        if (produced >= total) return void this.push(null);
        produced += 64 * 1024;
        maxAhead = Math.max(maxAhead, produced - received);
        this.push(Buffer.alloc(64 * 1024, 0x62));
      },
    });
    const exec = await open({ stdin: source, writeHighWaterMark: 2 * MiB });
    exec.stdout.resume();
    assert.deepEqual(await exec.ended, { kind: "exit", code: 0 });
    assert.equal(received, total);
    assert.ok(maxAhead < 16 * MiB, `the source got ${(maxAhead / MiB).toFixed(1)} MiB ahead of the server`);
  });
});
