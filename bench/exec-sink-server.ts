// A v5.channel.k8s.io exec endpoint that discards stdin and answers Success at its CLOSE: the far end of
// exec-send-bench, in a process of its own so that the sender's CPU is measured alone. Prints its port.
// Usage: node dist/bench/exec-sink-server.js [CERT_PEM KEY_PEM]
import { readFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { WebSocketServer } from "ws";

const [certPath, keyPath] = process.argv.slice(2);
const server =
  certPath && keyPath
    ? createHttpsServer({ cert: readFileSync(certPath), key: readFileSync(keyPath) })
    : createHttpServer();
const wss = new WebSocketServer({
  server,
  perMessageDeflate: false,
  maxPayload: 64 * 1024 * 1024,
  handleProtocols: () => "v5.channel.k8s.io",
});
wss.on("connection", (ws) => {
  let bytes = 0;
  ws.on("message", (data: Buffer) => {
    if (data[0] === 0) bytes += data.length - 1;
    else if (data[0] === 255 && data[1] === 0) {
      ws.send(Buffer.concat([Buffer.from([1]), Buffer.from(`${bytes}\n`)]));
      ws.send(Buffer.concat([Buffer.from([3]), Buffer.from(JSON.stringify({ metadata: {}, status: "Success" }))]));
      ws.close(1000);
    }
  });
});
server.listen(0, "127.0.0.1", () => console.log((server.address() as { port: number }).port));
