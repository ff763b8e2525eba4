// The service's HTTP(S) server: bearer auth on every endpoint, /xrpc/<nsid> to the router, /logs and /events as streams, /metrics for Prometheus.
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createRequire } from "node:module";
import type { Duplex } from "node:stream";
import type { WebSocketServer as WebSocketServerType } from "ws";
import type { FollowerBudget } from "./follower-budget.js";
import { formatServerErrorLine, XrpcError } from "./http-errors.js";
import type { LexiconChecks } from "./lexicon-schemas.js";
import type { RunService } from "./run-service.js";
import type { ServeMetrics } from "./serve-metrics.js";
import { refuseUpgrade, resolveStream, serveNdjson, serveWebSocket } from "./stream-routes.js";
import { buildXrpcHandlers } from "./xrpc-handlers.js";
import { createXrpcRouter, writeJson } from "./xrpc-router.js";

export interface ServeServerOptions {
  readonly service: RunService;
  readonly lexicons: LexiconChecks;
  /** True when an Authorization header carries the service's token. */
  readonly checkToken: (authorization: string | undefined) => boolean;
  readonly metrics: ServeMetrics;
  /** `--metrics-without-token`: /metrics answers without the token (every other endpoint still needs it). */
  readonly metricsWithoutToken: boolean;
  readonly maxBodyBytes: number;
  /** PEM certificate and key: the server speaks HTTPS. */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer };
  /** The bounds every /logs and /events follower is held to. */
  readonly followers: FollowerBudget;
  readonly warn: (message: string) => void;
}

const UNAUTHORIZED = new XrpcError(
  401,
  "AuthenticationRequired",
  "this endpoint needs Authorization: Bearer <token>, the content of the service's --token-file",
);

/** The server, not yet listening. */
export function createServeServer(options: ServeServerOptions): Server {
  const route = createXrpcRouter({
    lexicons: options.lexicons,
    handlers: buildXrpcHandlers(options.service),
    maxBodyBytes: options.maxBodyBytes,
    onServerError: (error) => options.warn(formatServerErrorLine(error)),
  });
  // Required here, not imported: the CLI is one bundle, and a static import would load ws for every command.
  const { WebSocketServer } = createRequire(import.meta.url)("ws") as { WebSocketServer: typeof WebSocketServerType };
  const wss = new WebSocketServer({ noServer: true });
  const streams = { budget: options.followers, warn: options.warn };
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? "/", "http://service");
    const path = url.pathname;
    if (path === "/metrics" && options.metricsWithoutToken) {
      void serveMetrics(options.metrics, res);
      return;
    }
    if (!options.checkToken(req.headers.authorization)) {
      writeJson(res, 401, { error: UNAUTHORIZED.error, message: UNAUTHORIZED.message });
      return;
    }
    if (path.startsWith("/xrpc/")) {
      void route(req, res, path.slice("/xrpc/".length), url.searchParams);
      return;
    }
    if (path === "/metrics") {
      void serveMetrics(options.metrics, res);
      return;
    }
    if (req.method !== "GET") {
      writeJson(res, 405, { error: "InvalidRequest", message: `${path} takes GET` });
      return;
    }
    try {
      serveNdjson(req, res, resolveStream(options.service, path, url.searchParams), streams);
    } catch (error) {
      const status = error instanceof XrpcError ? error.status : 500;
      writeJson(
        res,
        status,
        error instanceof XrpcError
          ? { error: error.error, message: error.message }
          : { error: "InternalServerError", message: "internal error" },
      );
    }
  };
  const server = options.tls
    ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, handle)
    : createHttpServer(handle);
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", () => undefined);
    if (!options.checkToken(req.headers.authorization)) {
      refuseUpgrade(socket, UNAUTHORIZED);
      return;
    }
    try {
      const url = new URL(req.url ?? "/", "http://service");
      serveWebSocket(wss, req, socket, head, resolveStream(options.service, url.pathname, url.searchParams), streams);
    } catch (error) {
      refuseUpgrade(socket, error);
    }
  });
  server.on("close", () => wss.close());
  return server;
}

async function serveMetrics(metrics: ServeMetrics, res: ServerResponse): Promise<void> {
  const text = await metrics.render();
  res.writeHead(200, { "Content-Type": metrics.contentType });
  res.end(text);
}
