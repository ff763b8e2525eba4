// The HTTP server: authenticates and authorizes, then routes discovery, OpenAPI, resources, exec upgrades and the fault admin endpoint; can go down on demand.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { Duplex } from "node:stream";
import { ADMIN_USER } from "./access-control.js";
import { ApiError, buildFailureStatus, notFound } from "./api-error.js";
import { handleResource, type ApiContext } from "./api-handler.js";
import {
  buildApiGroup,
  buildApiGroupList,
  buildApiResourceList,
  buildApiVersions,
  buildVersionInfo,
} from "./discovery.js";
import { ExecServer, rejectUpgrade } from "./exec-bridge.js";
import { parseFaultConfig } from "./faults.js";
import { readBody, sendError, sendJson } from "./http-util.js";
import { buildOpenApiGroupVersion, buildOpenApiIndex } from "./openapi.js";
import { describeExecUpgrade, describeRequest } from "./request-attributes.js";
import { parseRoute } from "./routes.js";
import type { ServingCertificate } from "./tls.js";

export interface ApiServerOptions extends ApiContext {
  /** Extra state for GET /_state (pods, jobs, podman containers). */
  describeState: () => Promise<object>;
  /** Log one line per request to stderr. */
  logRequests?: boolean;
  /** Told of every request on the API port (exec upgrades included) as it arrives: method and URL with its query. */
  onRequest?: (request: { method: string; url: string; upgrade: boolean }) => void;
  /** Serve the API port over HTTPS with this certificate (the admin port stays plain http). */
  tls?: ServingCertificate;
}

/** Answers the fault admin endpoint: GET shows faults and firings, PUT replaces them (validated). */
async function handleFaults(ctx: ApiContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === "PUT" || req.method === "POST") {
    const text = (await readBody(req)).toString("utf8");
    let parsed;
    try {
      parsed = parseFaultConfig(text.trim() ? JSON.parse(text) : {});
    } catch (e) {
      throw new ApiError(400, "BadRequest", e instanceof Error ? e.message : String(e));
    }
    ctx.faults.set(parsed);
  } else if (req.method === "DELETE") ctx.faults.set({});
  sendJson(res, 200, { faults: ctx.faults.current, firings: ctx.faults.history() });
}

export class ApiServer {
  readonly http: Server | HttpsServer;
  readonly admin: Server;
  private readonly exec: ExecServer;
  private readonly sockets = new Set<Socket>();
  private port = 0;
  private host = "127.0.0.1";
  private down = false;
  private downTimers: NodeJS.Timeout[] = [];
  /** Ends each latency fault's wait early: close() calls them, so a stopped server holds no timer open. */
  private latencyWaits = new Set<() => void>();

  constructor(private readonly opts: ApiServerOptions) {
    this.exec = new ExecServer(opts);
    const handler = (req: IncomingMessage, res: ServerResponse): void => void this.handle(req, res, false);
    this.http = opts.tls
      ? createHttpsServer({ cert: opts.tls.cert, key: opts.tls.key }, handler)
      : createServer(handler);
    this.http.on(
      "upgrade",
      (req: IncomingMessage, socket: Duplex, head: Buffer) => void this.handleUpgrade(req, socket, head),
    );
    this.http.on("connection", (s: Socket) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
    this.http.requestTimeout = 0;
    this.http.keepAliveTimeout = 65_000;
    this.admin = createServer((req, res) => void this.handle(req, res, true));
    opts.faults.onChange((f) => this.applyServerDown(f.serverDown));
  }

  get url(): string {
    return `${this.opts.tls ? "https" : "http"}://${this.host}:${this.port}`;
  }

  get adminUrl(): string {
    const a = this.admin.address() as AddressInfo | null;
    return a ? `http://${this.host}:${a.port}` : "";
  }

  async listen(port: number, adminPort: number, host = "127.0.0.1"): Promise<void> {
    this.host = host;
    await new Promise<void>((resolve, reject) => {
      this.http.once("error", reject);
      this.http.listen(port, host, () => resolve());
    });
    this.port = (this.http.address() as AddressInfo).port;
    await new Promise<void>((resolve, reject) => {
      this.admin.once("error", reject);
      this.admin.listen(adminPort, host, () => resolve());
    });
  }

  /** Whether the API port is currently refusing connections (serverDown fault). */
  get isDown(): boolean {
    return this.down;
  }

  private applyServerDown(f: { afterSeconds?: number; forSeconds?: number } | undefined): void {
    this.downTimers.forEach(clearTimeout);
    this.downTimers = [];
    if (!f) {
      if (this.down) this.bringUp();
      return;
    }
    this.downTimers.push(
      setTimeout(
        () => {
          this.takeDown();
          if (f.forSeconds !== undefined) this.downTimers.push(setTimeout(() => this.bringUp(), f.forSeconds * 1000));
        },
        (f.afterSeconds ?? 0) * 1000,
      ),
    );
  }

  private takeDown(): void {
    if (this.down) return;
    this.down = true;
    this.http.close();
    this.exec.closeAll();
    for (const s of this.sockets) s.destroy();
  }

  private bringUp(): void {
    if (!this.down) return;
    this.down = false;
    this.http.listen(this.port, this.host);
  }

  async close(): Promise<void> {
    this.downTimers.forEach(clearTimeout);
    this.latencyWaits.forEach((end) => end());
    this.exec.closeAll();
    for (const s of this.sockets) s.destroy();
    await Promise.all([
      new Promise<void>((r) => (this.down ? r() : this.http.close(() => r()))),
      new Promise<void>((r) => this.admin.close(() => r())),
    ]);
  }

  /**
   * Waits a matching latency fault out; false when the client went away meanwhile: kube-apiserver cancels the context
   * of a request whose client left, so such a request is dropped, not applied.
   */
  private async applyLatency(req: IncomingMessage, res?: ServerResponse): Promise<boolean> {
    const latency = this.opts.faults.take("latency", `${req.method} ${req.url}`);
    if (!latency) return true;
    let gone = false;
    res?.once("close", () => (gone = true));
    let closed = false;
    await new Promise<void>((resolve) => {
      const end = (): void => {
        clearTimeout(timer);
        this.latencyWaits.delete(onClose);
        resolve();
      };
      const onClose = (): void => ((closed = true), end());
      const timer = setTimeout(end, latency.ms);
      this.latencyWaits.add(onClose);
    });
    return !closed && !gone && !req.socket.destroyed;
  }

  private async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on("error", () => undefined);
    this.opts.onRequest?.({ method: req.method ?? "GET", url: req.url ?? "/", upgrade: true });
    try {
      if (!(await this.applyLatency(req))) return void socket.destroy();
      const url = new URL(req.url ?? "/", "http://local");
      const route = parseRoute(url.pathname);
      const method = req.method ?? "GET";
      const user = this.opts.access.authenticate(req.headers.authorization);
      const attributes = describeRequest(route, method, url);
      if (
        route.kind !== "resource" ||
        route.type.resource !== "pods" ||
        route.subresource !== "exec" ||
        !route.namespace ||
        !route.name
      ) {
        this.opts.access.require(user, attributes);
        throw notFound("", "", url.pathname);
      }
      const target = { namespace: route.namespace, pod: route.name, user: user.username };
      if (this.opts.logRequests)
        process.stderr.write(`${new Date().toISOString()} UPGRADE(${req.headers.upgrade}) ${req.method} ${req.url}\n`);
      try {
        // get and create for a WebSocket upgrade, as kube-apiserver 1.35 checks; create for SPDY (a POST).
        this.opts.access.require(user, ...describeExecUpgrade(attributes, method));
      } catch (e) {
        if (e instanceof ApiError && e.code === 403) return this.exec.refuseUpgrade(req, socket, target, e);
        throw e;
      }
      this.exec.handleUpgrade(req, socket, head, target, url);
    } catch (e) {
      rejectUpgrade(socket, e instanceof ApiError ? e : new ApiError(500, "InternalError", String(e)));
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse, admin: boolean): Promise<void> {
    const started = Date.now();
    if (!admin) this.opts.onRequest?.({ method: req.method ?? "GET", url: req.url ?? "/", upgrade: false });
    try {
      if (!admin && !(await this.applyLatency(req, res))) return;
      const url = new URL(req.url ?? "/", "http://local");
      const route = parseRoute(url.pathname);
      if (admin && route.kind !== "faults" && route.kind !== "state" && route.kind !== "health")
        throw notFound("", "", url.pathname);
      // The admin port is the operator's; on the API port a bearer token is a ServiceAccount held to its RBAC.
      const user = admin ? ADMIN_USER : this.opts.access.authenticate(req.headers.authorization);
      if (!admin) this.opts.access.require(user, describeRequest(route, req.method ?? "GET", url));
      switch (route.kind) {
        case "version":
          return sendJson(res, 200, buildVersionInfo());
        case "health":
          res.writeHead(200, { "Content-Type": "text/plain" });
          return void res.end("ok");
        case "api":
          return sendJson(res, 200, buildApiVersions());
        case "apis":
          return sendJson(res, 200, buildApiGroupList());
        case "group": {
          const g = buildApiGroup(route.group);
          if (!g) throw notFound("", "", url.pathname);
          return sendJson(res, 200, g);
        }
        case "groupVersion": {
          const list = buildApiResourceList(route.group, route.version);
          if (!list) throw notFound("", "", url.pathname);
          return sendJson(res, 200, list);
        }
        case "openapiIndex":
          return sendJson(res, 200, buildOpenApiIndex());
        case "openapiGroupVersion": {
          const doc = buildOpenApiGroupVersion(route.group, route.version);
          if (!doc) throw notFound("", "", url.pathname);
          return sendJson(res, 200, doc);
        }
        case "faults":
          return await handleFaults(this.opts, req, res);
        case "state":
          return sendJson(res, 200, await this.opts.describeState());
        case "resource":
          return await handleResource(this.opts, req, res, route, url, user);
        default:
          sendJson(
            res,
            404,
            buildFailureStatus(404, "NotFound", "the server could not find the requested resource", {}),
          );
      }
    } catch (e) {
      sendError(res, e);
    } finally {
      if (this.opts.logRequests)
        process.stderr.write(
          `${new Date().toISOString()} ${req.method} ${req.url} ${res.statusCode} ${Date.now() - started}ms\n`,
        );
    }
  }
}
