// GET /logs/{runId} and GET /events?cursor=N[&epoch=E]: each as a WebSocket of JSON text frames, or as NDJSON over chunked HTTP for clients that ask for it (Accept: application/x-ndjson).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { WebSocket, WebSocketServer } from "ws";
import type { FollowerBudget, StreamKind } from "./follower-budget.js";
import { followOverNdjson, followOverWebSocket, type Follow } from "./follower-output.js";
import { mapErrorToHttp, XrpcError } from "./http-errors.js";
import type { RunService } from "./run-service.js";
import { writeJson } from "./xrpc-router.js";

/** A stream a path names: its kind and its source. */
export interface StreamRoute {
  readonly stream: StreamKind;
  readonly follow: Follow;
}

/** What every stream is served with: the followers' bounds, and where a failed source is told. */
export interface StreamContext {
  readonly budget: FollowerBudget;
  readonly warn: (message: string) => void;
}

/**
 * Which stream a path names, with its source; throws XrpcError (404, 400) for a path or query it cannot serve, before
 * anything is streamed: RunNotFound, InvalidRequest, FutureCursor (a cursor past the latest), EpochMismatch.
 */
export function resolveStream(service: RunService, path: string, query: URLSearchParams): StreamRoute {
  const logs = /^\/logs\/([^/]+)$/.exec(path);
  if (logs) {
    let runId: string;
    try {
      runId = decodeURIComponent(logs[1]!);
    } catch {
      throw new XrpcError(400, "InvalidRequest", `the run id in ${path} is not valid percent-encoding`);
    }
    service.assertKnownRun(runId); // throws RunNotFound before anything is streamed
    return { stream: "logs", follow: (output) => service.followLogs(runId, output) };
  }
  if (path === "/events") {
    const text = query.get("cursor") ?? "0";
    if (!/^\d{1,15}$/.test(text))
      throw new XrpcError(
        400,
        "InvalidRequest",
        `cursor expects a whole number (the last cursor seen, 0 for every event), got ${JSON.stringify(text)}`,
      );
    const cursor = Number(text);
    service.checkEventsCursor(cursor, query.get("epoch") ?? undefined);
    return { stream: "events", follow: (output) => service.followEvents(cursor, output) };
  }
  throw new XrpcError(404, "NotFound", `no stream at ${path}`);
}

/** Serves a stream as NDJSON (chunked), or refuses with 406 a client that asked for neither NDJSON nor a WebSocket. */
export function serveNdjson(
  req: IncomingMessage,
  res: ServerResponse,
  route: StreamRoute,
  context: StreamContext,
): void {
  if (!(req.headers.accept ?? "").includes("application/x-ndjson")) {
    writeJson(res, 406, {
      error: "NotAcceptable",
      message: "this is a stream: connect a WebSocket, or ask for Accept: application/x-ndjson",
    });
    return;
  }
  res.writeHead(200, { "Content-Type": "application/x-ndjson", "Cache-Control": "no-store" });
  res.flushHeaders();
  followOverNdjson(res, route.stream, route.follow, context.budget, context.warn);
}

/** Upgrades to a WebSocket and sends each line as a JSON text message; a normal close (1000) at the log's end. */
export function serveWebSocket(
  wss: WebSocketServer,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  route: StreamRoute,
  context: StreamContext,
): void {
  wss.handleUpgrade(req, socket, head, (ws: WebSocket) => {
    followOverWebSocket(ws, route.stream, route.follow, context.budget, context.warn, "end of the run's log");
  });
}

/** Refuses an upgrade with an HTTP answer and closes the socket. */
export function refuseUpgrade(socket: Duplex, error: unknown): void {
  const { status, body } = mapErrorToHttp(error);
  const text = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${status} ${status === 401 ? "Unauthorized" : "Error"}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  );
}
