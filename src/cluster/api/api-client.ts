// JSON requests to one API server over one keep-alive connection pool per identity, with per-request timeouts.
import { getMaxListeners, setMaxListeners } from "node:events";
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Duplex, Readable } from "node:stream";
import { connect as tlsConnect, type ConnectionOptions as TlsConnectionOptions } from "node:tls";
import { mapStatusError, mapTransportError } from "./api-errors.js";
import { Credentials, type Identity } from "./credentials.js";
import { openProxyTunnel } from "./proxy-tunnel.js";
import { requestSync, type SyncAnswer } from "./sync-request.js";
import type { ResolvedKubeconfig } from "./kubeconfig.js";

export interface ApiClientOptions {
  readonly kubeconfig: ResolvedKubeconfig;
  /** The environment exec credential plugins inherit (the CLI's; never read here from process.env). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** A request without its own timeout gets this (default 30 s). */
  readonly requestTimeoutMs?: number;
  /** How long an idle pooled connection is kept (default 60 s). */
  readonly keepAliveMs?: number;
  /** Told of every request once it is answered or failed (the run's log, as kubectl's `onCall`); must not throw. */
  readonly onCall?: (call: ApiCall) => void;
}

/**
 * One request as the log records it: never a header or a body, so never a token or a secret (no secret is ever in a
 * request line). `status` is the HTTP status (101 for an exec upgrade), null when no answer came; `durationMs` runs
 * to the answer's headers (a watch's body streams on after it).
 */
export interface ApiCall {
  readonly method: string;
  /** The path with its query, as sent. */
  readonly path: string;
  readonly status: number | null;
  readonly durationMs: number;
}

export interface RequestOptions {
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  readonly body?: unknown;
  /** Default application/json; merge patches say so. */
  readonly contentType?: string;
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
  /** What the call is, for a 403's message (`get`, `jobs.batch`). */
  readonly verb: string;
  readonly resource: string;
}

/** What the WebSocket exec needs to open its own connection with the same TLS and credential. */
export interface UpgradeTarget {
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly tls: { ca?: string; cert?: string; key?: string; rejectUnauthorized: boolean; servername?: string };
  /** The kubeconfig's proxy-url, for a CONNECT tunnel. */
  readonly proxyUrl?: string;
  /** Call after the server refused the credential (401), then ask again. */
  readonly refused: () => void;
}

/**
 * One API server and one identity, shared by every run of the process. Connections are pooled per TLS identity (an
 * exec plugin that hands out a new client certificate gets a new pool; the old one is closed). A request refused with
 * 401 is sent once more after the credential is refreshed (exec plugins, tokenFile). Never logs a header.
 */
export class ApiClient {
  private readonly credentials: Credentials;
  private readonly pools = new Map<string, HttpAgent>();

  constructor(private readonly options: ApiClientOptions) {
    this.credentials = new Credentials(options.kubeconfig, options.env);
  }

  get kubeconfig(): ResolvedKubeconfig {
    return this.options.kubeconfig;
  }

  /** A JSON request; resolves with the parsed body of a 2xx, rejects with the typed error of anything else. */
  async request(method: string, path: string, options: RequestOptions): Promise<unknown> {
    const response = await this.send(method, path, options);
    const text = await readText(response).catch((error: unknown) => {
      throw mapTransportError(error, `${method} ${path}`);
    });
    return text ? (JSON.parse(text) as unknown) : undefined;
  }

  /**
   * A text request (a container's log): resolves with at most `maxBytes` of a 2xx's body (the rest is not read: the
   * response is destroyed), rejects as `request` does.
   */
  async requestText(
    method: string,
    path: string,
    options: RequestOptions & { readonly maxBytes: number },
  ): Promise<string> {
    const response = await this.send(method, path, options);
    const chunks: Buffer[] = [];
    let bytes = 0;
    try {
      for await (const chunk of response as AsyncIterable<Buffer>) {
        chunks.push(chunk);
        bytes += chunk.length;
        if (bytes >= options.maxBytes) break;
      }
    } catch (error) {
      throw mapTransportError(error, `${method} ${path}`);
    } finally {
      response.destroy();
    }
    return Buffer.concat(chunks).subarray(0, options.maxBytes).toString("utf8");
  }

  /**
   * A streamed request (a watch): resolves once a 2xx's headers arrived, with the body as a stream; `inactivityMs`
   * destroys it when no byte arrives for that long (a TimeoutError). Non-2xx rejects as `request` does.
   */
  async stream(path: string, options: RequestOptions & { readonly inactivityMs: number }): Promise<Readable> {
    return this.send("GET", path, options);
  }

  /** Reports a request this client did not send itself (an exec's upgrade) to `onCall`, as `send` reports its own. */
  noteCall(call: ApiCall): void {
    this.options.onCall?.(call);
  }

  /** The URL, headers and TLS options for a WebSocket upgrade on `path`. */
  async prepareUpgrade(path: string, query: URLSearchParams): Promise<UpgradeTarget> {
    const identity = await this.credentials.current();
    const { kubeconfig } = this.options;
    const url = `${kubeconfig.server.replace(/^http/, "ws")}${path}?${query.toString()}`;
    return {
      url,
      headers: identity.authorization ? { Authorization: identity.authorization } : {},
      tls: { ...this.tlsOptions(identity), rejectUnauthorized: !kubeconfig.tls.insecureSkipVerify },
      ...(kubeconfig.proxyUrl ? { proxyUrl: kubeconfig.proxyUrl } : {}),
      refused: () => this.credentials.refused(identity),
    };
  }

  /**
   * A blocking request for the crash path, with the credential in hand (none yet from an exec plugin or tokenFile:
   * an error answer). Never throws.
   */
  requestSync(method: string, path: string, body: unknown, timeoutMs: number): SyncAnswer {
    const identity = this.credentials.peek();
    if (!identity) return { error: "no credential obtained yet (exec plugin or tokenFile)" };
    const { kubeconfig } = this.options;
    const started = Date.now();
    const answer = requestSync(
      {
        url: kubeconfig.server + path,
        method,
        headers: {
          Accept: "application/json",
          ...(identity.authorization ? { Authorization: identity.authorization } : {}),
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        tls: { ...this.tlsOptions(identity), rejectUnauthorized: !kubeconfig.tls.insecureSkipVerify },
      },
      timeoutMs,
    );
    this.noteCall({
      method,
      path,
      status: "status" in answer ? answer.status : null,
      durationMs: Date.now() - started,
    });
    return answer;
  }

  /** Closes every pooled connection (watches and requests in flight fail). */
  async close(): Promise<void> {
    for (const agent of this.pools.values()) agent.destroy();
    this.pools.clear();
  }

  private async send(
    method: string,
    path: string,
    options: RequestOptions & { inactivityMs?: number },
    retried = false,
  ): Promise<IncomingMessage> {
    const identity = await this.credentials.current();
    const agent = this.pool(identity);
    const url = new URL(this.options.kubeconfig.server + path);
    for (const [key, value] of Object.entries(options.query ?? {}))
      if (value !== undefined) url.searchParams.set(key, String(value));
    const headers: Record<string, string> = { Accept: "application/json" };
    if (identity.authorization) headers.Authorization = identity.authorization;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers["Content-Type"] = options.contentType ?? "application/json";
      headers["Content-Length"] = String(Buffer.byteLength(body));
    }
    // The socket's inactivity bounds both the wait for the answer and each pause in its body (a watch's: inactivityMs).
    const idleMs = options.inactivityMs ?? options.timeoutMs ?? this.options.requestTimeoutMs ?? 30_000;
    // Each request in flight listens on the caller's signal; doctor sends a dozen at once under one.
    if (options.signal && getMaxListeners(options.signal) < 100) setMaxListeners(100, options.signal);
    const what = `${method} ${url.pathname}`;
    const started = Date.now();
    const note = (status: number | null): void =>
      this.noteCall({ method, path: url.pathname + url.search, status, durationMs: Date.now() - started });
    let response: IncomingMessage;
    try {
      response = await new Promise<IncomingMessage>((resolve, reject) => {
        const send = url.protocol === "https:" ? httpsRequest : httpRequest;
        const req = send(
          url,
          { method, headers, agent, ...(options.signal ? { signal: options.signal } : {}) },
          resolve,
        );
        req.setTimeout(idleMs, () =>
          req.destroy(Object.assign(new Error(`nothing for ${idleMs} ms`), { name: "TimeoutError" })),
        );
        req.on("error", reject);
        req.end(body);
      });
    } catch (error) {
      note(null);
      throw mapTransportError(error, what);
    }
    const status = response.statusCode ?? 0;
    note(status);
    if (status >= 200 && status < 300) return response;
    const text = await readText(response).catch(() => "");
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (status === 401 && !retried && this.credentials.refused(identity)) return this.send(method, path, options, true);
    throw mapStatusError(
      status,
      parsed ?? { kind: "Status", message: text.trim().slice(0, 500) || undefined },
      options,
    );
  }

  /** The keep-alive agent of this TLS identity; a new identity (a rotated client certificate) replaces the old one. */
  private pool(identity: Identity): HttpAgent {
    const key = identity.tlsKey;
    const existing = this.pools.get(key);
    if (existing) return existing;
    for (const [old, agent] of this.pools) {
      this.pools.delete(old);
      agent.destroy();
    }
    const { kubeconfig } = this.options;
    const tls = { ...this.tlsOptions(identity), rejectUnauthorized: !kubeconfig.tls.insecureSkipVerify };
    const base = { keepAlive: true, keepAliveMsecs: 30_000, timeout: this.options.keepAliveMs ?? 60_000 };
    const secure = kubeconfig.server.startsWith("https:");
    const agent = secure ? new HttpsAgent({ ...base, ...tls }) : new HttpAgent(base);
    const proxyUrl = kubeconfig.proxyUrl;
    if (proxyUrl) {
      // Every connection is a CONNECT tunnel through the proxy, then TLS to the server as without one.
      const connectTimeout = this.options.requestTimeoutMs ?? 30_000;
      (
        agent as unknown as {
          createConnection: (
            o: TlsConnectionOptions & { host: string; port: number },
            done: (error: Error | null, socket?: Duplex) => void,
          ) => undefined;
        }
      ).createConnection = (o, done) => {
        openProxyTunnel(proxyUrl, { host: o.host, port: Number(o.port) }, connectTimeout).then(
          (socket) => done(null, secure ? tlsConnect({ ...o, socket }) : socket),
          (error: Error) => done(error),
        );
        return undefined;
      };
    }
    this.pools.set(key, agent);
    return agent;
  }

  private tlsOptions(identity: Identity): { ca?: string; cert?: string; key?: string; servername?: string } {
    const { tls } = this.options.kubeconfig;
    return {
      ...(tls.ca ? { ca: tls.ca } : {}),
      ...(identity.cert ? { cert: identity.cert, key: identity.key } : {}),
      ...(tls.serverName ? { servername: tls.serverName } : {}),
    };
  }
}

/** A response body as text (the socket's inactivity timeout still bounds it). */
async function readText(response: IncomingMessage): Promise<string> {
  response.setEncoding("utf8");
  let text = "";
  for await (const chunk of response) text += chunk as string;
  return text;
}
