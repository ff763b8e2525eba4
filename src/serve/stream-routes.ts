// GET /logs/{runId} and GET /events?cursor=N: each as a WebSocket of JSON text frames, or as NDJSON over chunked HTTP for clients that ask for it (Accept: application/x-ndjson).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { WebSocket, WebSocketServer } from "ws";
import { mapErrorToHttp, XrpcError } from "./http-errors.js";
import type { RunService } from "./run-service.js";
import { writeJson } from "./xrpc-router.js";

/**
 * A client that falls this far behind is cut off rather than buffered without end: it reconnects (from its last
 * cursor, or from the log's first line).
 */
export const MAX_BUFFERED_BYTES = 64 * 1024 * 1024;

/** A stream's source: hands text frames to `send`, then calls `end` (logs) or never (events); returns the unsubscribe. */
type Follow = (send: (text: string) => void, end: () => void) => () => void;

/** Which stream a path names, with its follow; throws XrpcError (404, 400) for a path or query it cannot serve. */
export function resolveStream(service: RunService, path: string, query: URLSearchParams): Follow {
  const logs = /^\/logs\/([^/]+)$/.exec(path);
  if (logs) {
    let runId: string;
    try {
      runId = decodeURIComponent(logs[1]!);
    } catch {
      throw new XrpcError(400, "InvalidRequest", `the run id in ${path} is not valid percent-encoding`);
    }
    service.assertKnownRun(runId); // throws RunNotFound before anything is streamed
    return (send, end) => service.followLogs(runId, { line: send, end });
  }
  if (path === "/events") {
    const text = query.get("cursor") ?? "0";
    if (!/^\d{1,15}$/.test(text)) throw new XrpcError(400, "InvalidRequest", `cursor expects a whole number (the last cursor seen, 0 for every event), got ${JSON.stringify(text)}`);
    return (send) => service.followEvents(Number(text), (event) => send(JSON.stringify(event)));
  }
  throw new XrpcError(404, "NotFound", `no stream at ${path}`);
}

/** Serves a stream as NDJSON (chunked), or refuses with 406 a client that asked for neither NDJSON nor a WebSocket. */
export function serveNdjson(req: IncomingMessage, res: ServerResponse, follow: Follow): void {
  if (!(req.headers.accept ?? "").includes("application/x-ndjson")) {
    writeJson(res, 406, { error: "NotAcceptable", message: "this is a stream: connect a WebSocket, or ask for Accept: application/x-ndjson" });
    return;
  }
  res.writeHead(200, { "Content-Type": "application/x-ndjson", "Cache-Control": "no-store" });
  res.flushHeaders();
  const stop = follow(
    (text) => {
      if (res.destroyed) return;
      res.write(`${text}\n`);
      if (res.writableLength > MAX_BUFFERED_BYTES) res.destroy();
    },
    () => res.end(),
  );
  res.on("close", stop);
}

/** Upgrades to a WebSocket and sends each frame as a JSON text message; a normal close (1000) at the stream's end. */
export function serveWebSocket(wss: WebSocketServer, req: IncomingMessage, socket: Duplex, head: Buffer, follow: Follow): void {
  wss.handleUpgrade(req, socket, head, (ws: WebSocket) => {
    const stop = follow(
      (text) => {
        if (ws.readyState !== ws.OPEN) return;
        ws.send(text);
        if (ws.bufferedAmount > MAX_BUFFERED_BYTES) ws.terminate();
      },
      () => ws.close(1000, "end of the run's log"),
    );
    ws.on("close", stop);
    ws.on("error", stop);
  });
}

/** Refuses an upgrade with an HTTP answer and closes the socket. */
export function refuseUpgrade(socket: Duplex, error: unknown): void {
  const { status, body } = mapErrorToHttp(error);
  const text = JSON.stringify(body);
  socket.end(`HTTP/1.1 ${status} ${status === 401 ? "Unauthorized" : "Error"}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`);
}
