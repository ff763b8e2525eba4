// JSON requests to one API server over one keep-alive connection pool per identity, with per-request timeouts.
import { getMaxListeners, setMaxListeners } from "node:events";
import type { Readable } from "node:stream";
import type { Dispatcher } from "undici";
import { mapStatusError, mapTransportError } from "./api-errors.js";
import { Credentials, type Identity } from "./credentials.js";
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
  private readonly pools = new Map<string, Dispatcher>();
  private undici: typeof import("undici") | undefined;

  constructor(private readonly options: ApiClientOptions) {
    this.credentials = new Credentials(options.kubeconfig, options.env);
  }

  get kubeconfig(): ResolvedKubeconfig {
    return this.options.kubeconfig;
  }

  /** A JSON request; resolves with the parsed body of a 2xx, rejects with the typed error of anything else. */
  async request(method: string, path: string, options: RequestOptions): Promise<unknown> {
    const { body } = await this.send(method, path, options, false);
    const text = await body.text().catch((error: unknown) => {
      throw mapTransportError(error, `${method} ${path}`);
    });
    // undici frees the connection a turn after the body ends: a request sent at once would open a second one.
    await new Promise((resolve) => setImmediate(resolve));
    return text ? (JSON.parse(text) as unknown) : undefined;
  }

  /**
   * A streamed request (a watch): resolves once a 2xx's headers arrived, with the body as a stream; `inactivityMs`
   * aborts the body when no byte arrives for that long (undici's bodyTimeout). Non-2xx rejects as `request` does.
   */
  async stream(path: string, options: RequestOptions & { readonly inactivityMs: number }): Promise<Readable> {
    const { body } = await this.send("GET", path, options, true);
    return body as unknown as Readable;
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
    return requestSync(
      {
        url: kubeconfig.server + path,
        method,
        headers: { Accept: "application/json", ...(identity.authorization ? { Authorization: identity.authorization } : {}), ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        tls: { ...this.tlsOptions(identity), rejectUnauthorized: !kubeconfig.tls.insecureSkipVerify },
      },
      timeoutMs,
    );
  }

  /** Closes every pooled connection (watches and requests in flight fail). */
  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((pool) => pool.destroy().catch(() => undefined)));
  }

  private async send(method: string, path: string, options: RequestOptions & { inactivityMs?: number }, streaming: boolean, retried = false): Promise<Dispatcher.ResponseData> {
    const undici = (this.undici ??= await import("undici"));
    const identity = await this.credentials.current();
    const dispatcher = this.pool(undici, identity);
    const url = new URL(this.options.kubeconfig.server + path);
    for (const [key, value] of Object.entries(options.query ?? {})) if (value !== undefined) url.searchParams.set(key, String(value));
    const headers: Record<string, string> = { Accept: "application/json" };
    if (identity.authorization) headers.Authorization = identity.authorization;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers["Content-Type"] = options.contentType ?? "application/json";
    }
    const timeoutMs = options.timeoutMs ?? this.options.requestTimeoutMs ?? 30_000;
    // Each request in flight listens on the caller's signal; doctor sends a dozen at once under one.
    if (options.signal && getMaxListeners(options.signal) < 100) setMaxListeners(100, options.signal);
    let response: Dispatcher.ResponseData;
    try {
      response = await undici.request(url, {
        dispatcher,
        method: method as Dispatcher.HttpMethod,
        headers,
        ...(body === undefined ? {} : { body }),
        ...(options.signal ? { signal: options.signal } : {}),
        headersTimeout: timeoutMs,
        bodyTimeout: streaming ? (options.inactivityMs ?? timeoutMs) : timeoutMs,
      });
    } catch (error) {
      throw mapTransportError(error, `${method} ${url.pathname}`);
    }
    if (response.statusCode >= 200 && response.statusCode < 300) return response;
    const text = await response.body.text().catch(() => "");
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (response.statusCode === 401 && !retried && this.credentials.refused(identity)) {
      return this.send(method, path, options, streaming, true);
    }
    throw mapStatusError(response.statusCode, parsed ?? { kind: "Status", message: text.trim().slice(0, 500) || undefined }, options);
  }

  private pool(undici: typeof import("undici"), identity: Identity): Dispatcher {
    const key = identity.tlsKey;
    const existing = this.pools.get(key);
    if (existing) return existing;
    for (const [old, pool] of this.pools) {
      this.pools.delete(old);
      void pool.close().catch(() => undefined);
    }
    const { kubeconfig } = this.options;
    const connect = { ...this.tlsOptions(identity), rejectUnauthorized: !kubeconfig.tls.insecureSkipVerify };
    const keepAlive = this.options.keepAliveMs ?? 60_000;
    const pool = kubeconfig.proxyUrl
      ? new undici.ProxyAgent({ uri: kubeconfig.proxyUrl, requestTls: connect, keepAliveTimeout: keepAlive })
      : new undici.Agent({ connect, keepAliveTimeout: keepAlive, keepAliveMaxTimeout: keepAlive });
    this.pools.set(key, pool);
    return pool;
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


