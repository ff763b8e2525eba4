// One exec over WebSocket `v5.channel.k8s.io`: framed stdin with backpressure and half-close, paced stdout and stderr, pings.
import { Readable, Writable, pipeline } from "node:stream";
import type { ClientRequest, IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { connect as tlsConnect, type ConnectionOptions as TlsOptions } from "node:tls";
import type { WebSocket as WebSocketType } from "ws";
import { ClusterError, CutStreamError, UnavailableError } from "../errors.js";
import { mapStatusError } from "./api-errors.js";
import { openProxyTunnel } from "./proxy-tunnel.js";

export const EXEC_PROTOCOL = "v5.channel.k8s.io";
const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const STATUS = 3;
const CLOSE = 255;

/** How the socket is reached: from ApiClient.prepareUpgrade. */
export interface ExecSocketTarget {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly tls: {
    readonly ca?: string;
    readonly cert?: string;
    readonly key?: string;
    readonly rejectUnauthorized: boolean;
    readonly servername?: string;
  };
  /** The kubeconfig's proxy-url: the socket goes through a CONNECT tunnel. */
  readonly proxyUrl?: string;
}

export interface ExecSocketOptions {
  /** `pipe`: the caller writes ExecSocket.stdin; a Readable: its bytes to its end; null: no stdin. */
  readonly stdin: "pipe" | Readable | null;
  /** A ping goes out this often (default 5 s, client-go's). */
  readonly pingIntervalMs?: number;
  /** Without any frame or pong for this long the stream counts as cut (default 61 s, client-go's). */
  readonly readDeadlineMs?: number;
  /**
   * After the exit Status the socket is dropped if it has not closed within this (default 2 s): the Status is the
   * protocol's last message, and a peer that stopped reading would hold ws's close handshake for 30 s.
   */
  readonly closeGraceMs?: number;
  /** The upgrade must complete within this (default 30 s). */
  readonly handshakeTimeoutMs?: number;
  /** Bytes stdout and stderr each hold for their consumer before the socket is paused (default 1 MiB). */
  readonly readHighWaterMark?: number;
  /** stdin stops taking bytes while this many are queued on the socket (default 4 MiB). */
  readonly writeHighWaterMark?: number;
  readonly signal?: AbortSignal;
  /** Told once how the upgrade was answered: its HTTP status (101 when taken), null when no answer came. */
  readonly onAnswer?: (status: number | null) => void;
}

/** How the socket ended: the command's exit status, or why there is none. */
export type ExecSocketEnd =
  { readonly kind: "exit"; readonly code: number } | { readonly kind: "failed"; readonly error: ClusterError };

export interface ExecSocket {
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** With `stdin: "pipe"`: `end()` sends the CLOSE signal [255, 0]; stdout keeps flowing. */
  readonly stdin: Writable | null;
  /** Resolves once the socket closed (never rejects); stdout and stderr end then too. */
  readonly ended: Promise<ExecSocketEnd>;
  /**
   * Drops the socket at once (what runs in the pod is not stopped): ends `failed` with CutStreamError, within the
   * close grace even if the socket's close never comes. stdout and stderr are destroyed, unread bytes discarded: the
   * caller gave up on them, and an output left holding bytes nobody reads would never end. Idempotent.
   */
  kill(): void;
}

/**
 * Opens an exec socket offering only `v5.channel.k8s.io`, the protocol whose CLOSE signal ends stdin while stdout
 * keeps flowing. The exit code is read from the channel-3 Status (Success: 0; NonZeroExitCode: the ExitCode cause);
 * a socket that closes without a Status ends `failed` with CutStreamError, never as a success. A refused upgrade ends
 * `failed` with the Status's typed error (5xx: UnavailableError `exec-not-ready`, nothing ran); a server that does
 * not speak v5 ends `failed` with an error naming `--transport kubectl`. Both output streams pause the socket while
 * their consumer is full; stdin waits on the socket's send callbacks, so no stream is ever held whole in memory.
 */
export async function openExecSocket(target: ExecSocketTarget, options: ExecSocketOptions): Promise<ExecSocket> {
  // ws loads on the first exec: ~160 ms of CPU (with bufferutil) --help, validate and a dry run never pay.
  const { WebSocket } = await import("ws");
  let answered = false;
  const answer = (status: number | null): void => {
    if (answered) return;
    answered = true;
    options.onAnswer?.(status);
  };
  let tunnel: Socket | undefined;
  if (target.proxyUrl) {
    const url = new URL(target.url);
    try {
      tunnel = await openProxyTunnel(
        target.proxyUrl,
        { host: url.hostname.replace(/^\[|\]$/g, ""), port: Number(url.port) || (url.protocol === "wss:" ? 443 : 80) },
        options.handshakeTimeoutMs ?? 30_000,
      );
    } catch (error) {
      if (options.stdin instanceof Readable) options.stdin.destroy();
      answer(null);
      return endedAtOnce(error instanceof ClusterError ? error : new UnavailableError("unreachable", String(error)));
    }
  }
  const through = tunnel;
  const readHighWaterMark = options.readHighWaterMark ?? 1024 * 1024;
  const writeHigh = options.writeHighWaterMark ?? 4 * 1024 * 1024;
  const ws: WebSocketType = new WebSocket(target.url, [EXEC_PROTOCOL], {
    headers: { ...target.headers },
    ...target.tls,
    perMessageDeflate: false,
    handshakeTimeout: options.handshakeTimeoutMs ?? 30_000,
    maxPayload: 64 * 1024 * 1024,
    ...(through
      ? {
          createConnection: (o: object) =>
            target.url.startsWith("wss:") ? tlsConnect({ ...(o as TlsOptions), socket: through }) : through,
        }
      : {}),
  });

  let status: ExecSocketEnd | undefined;
  let failure: ClusterError | undefined;
  let settled = false;
  let resolveEnded!: (end: ExecSocketEnd) => void;
  const ended = new Promise<ExecSocketEnd>((resolve) => (resolveEnded = resolve));

  let lastHeard = Date.now();
  let closeTimer: NodeJS.Timeout | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  // Reading: each output pauses the socket while its consumer is full; the socket resumes once neither is.
  const full = new Set<Readable>();
  const makeOutput = (): Readable =>
    new Readable({
      highWaterMark: readHighWaterMark,
      read() {
        if (full.delete(this) && full.size === 0 && ws.isPaused) {
          lastHeard = Date.now(); // a paused socket reads nothing, pongs included
          ws.resume();
        }
      },
    });
  const stdout = makeOutput();
  const stderr = makeOutput();
  const deliver = (stream: Readable, chunk: Buffer): void => {
    if (!stream.push(chunk)) {
      full.add(stream);
      ws.pause();
    }
  };

  // Writing: bytes queued on the socket are counted from send until its callback.
  let queued = 0;
  let waiting: Array<() => void> = [];
  const send = (frame: Buffer, done?: (error?: Error) => void): void => {
    if (ws.readyState !== ws.OPEN) {
      done?.(new CutStreamError("the exec stream is closed"));
      return;
    }
    queued += frame.length;
    ws.send(frame, { binary: true }, (error) => {
      queued -= frame.length;
      if (queued <= writeHigh / 4) {
        const ready = waiting;
        waiting = [];
        for (const go of ready) go();
      }
      done?.(error ?? undefined);
    });
  };
  let isOpen = false;
  const opened = new Promise<void>((resolve, reject) => {
    ws.once("open", () => {
      isOpen = true;
      resolve();
    });
    ws.once("close", () => reject(new CutStreamError("the exec stream closed before it opened")));
  });
  opened.catch(() => undefined);
  const stdin =
    options.stdin === null
      ? null
      : new Writable({
          highWaterMark: 256 * 1024,
          write(chunk: Buffer, _encoding, callback) {
            opened.then(
              () => {
                if (ws.readyState !== ws.OPEN)
                  return callback(new CutStreamError("the exec stream closed while stdin was being sent"));
                const frame = Buffer.allocUnsafe(chunk.length + 1);
                frame[0] = STDIN;
                chunk.copy(frame, 1);
                send(frame);
                if (queued <= writeHigh) callback();
                else waiting.push(() => callback());
              },
              (error: Error) => callback(error),
            );
          },
          final(callback) {
            opened.then(
              () => send(Buffer.from([CLOSE, STDIN]), (error) => callback(error)),
              (error: Error) => callback(error),
            );
          },
        });
  stdin?.on("error", () => undefined); // reported through `ended`

  const finish = (end: ExecSocketEnd): void => {
    if (settled) return;
    settled = true;
    clearInterval(pinger);
    clearTimeout(closeTimer);
    clearTimeout(killTimer);
    for (const go of waiting) go();
    waiting = [];
    stdout.push(null);
    stderr.push(null);
    if (stdin && !stdin.destroyed) stdin.destroy();
    resolveEnded(end);
  };

  ws.on("unexpected-response", (_req: ClientRequest, res: IncomingMessage) => {
    answer(res.statusCode ?? null);
    let body = "";
    res.setEncoding("utf8");
    res.on("data", (d: string) => (body = (body + d).slice(0, 64 * 1024)));
    res.on("end", () => {
      failure = mapUpgradeRefusal(res.statusCode ?? 0, body);
      ws.terminate();
      finish({ kind: "failed", error: failure });
    });
    res.on("error", () => undefined);
  });
  ws.on("upgrade", (res: IncomingMessage) => {
    answer(res.statusCode ?? 101);
    const chosen = res.headers["sec-websocket-protocol"];
    if (chosen !== EXEC_PROTOCOL)
      failure = refusesV5(`it answered the upgrade with sub-protocol ${chosen ? `"${String(chosen)}"` : "none"}`);
  });

  const pingInterval = options.pingIntervalMs ?? 5_000;
  const readDeadline = options.readDeadlineMs ?? 61_000;
  const pinger = setInterval(() => {
    if (ws.readyState !== ws.OPEN) return;
    if (Date.now() - lastHeard > readDeadline && !ws.isPaused) {
      failure = new CutStreamError(
        `the exec stream was silent for ${Math.round(readDeadline / 1000)} s (no data, no pong): the connection is taken as lost`,
      );
      ws.terminate();
      return;
    }
    ws.ping();
  }, pingInterval);
  pinger.unref?.();
  ws.on("pong", () => (lastHeard = Date.now()));

  ws.on("message", (data: Buffer, isBinary: boolean) => {
    lastHeard = Date.now();
    if (!isBinary || data.length === 0) return;
    const channel = data[0];
    if (channel === STDOUT) deliver(stdout, data.subarray(1));
    else if (channel === STDERR) deliver(stderr, data.subarray(1));
    else if (channel === STATUS) {
      status = readExitStatus(data.subarray(1).toString("utf8"));
      closeTimer ??= setTimeout(() => ws.terminate(), options.closeGraceMs ?? 2_000);
    }
  });
  ws.on("error", (error: Error & { code?: string }) => {
    if (failure || settled) return;
    if (/sub-?protocol/i.test(error.message)) failure = refusesV5(error.message);
    else if (!isOpen)
      failure = new UnavailableError(
        "unreachable",
        `the exec could not connect: ${error.message}${error.code && !error.message.includes(error.code) ? ` (${error.code})` : ""}`,
      );
    else if (!status) failure = new CutStreamError(`the exec stream failed: ${error.message}`);
  });
  ws.on("close", (code: number, reason: Buffer) => {
    answer(null); // closed before any answer (refused connection, handshake timeout, killed)
    if (status) return finish(status);
    const why = reason.length > 0 ? `${code} ${reason.toString("utf8")}` : String(code);
    finish({
      kind: "failed",
      error: failure ?? new CutStreamError(`the exec stream closed without the command's exit status (close ${why})`),
    });
  });

  if (options.stdin instanceof Readable) {
    pipeline(options.stdin, stdin!, () => undefined);
  }
  const kill = (): void => {
    failure ??= new CutStreamError("the exec was ended by the runner");
    // A paused output never emits its end, so whoever awaits it (ApiCluster's `ended`) would wait forever.
    stdout.destroy();
    stderr.destroy();
    if (ws.readyState !== ws.CLOSED) ws.terminate();
    // ws reports the close only once its receiver has parsed what the socket still held: do not depend on it.
    killTimer ??= setTimeout(
      () => finish(status ?? { kind: "failed", error: failure! }),
      options.closeGraceMs ?? 2_000,
    );
  };
  if (options.signal) {
    if (options.signal.aborted) kill();
    else options.signal.addEventListener("abort", kill, { once: true });
  }
  return { stdout, stderr, stdin: options.stdin === "pipe" ? stdin : null, ended, kill };
}

/** A session that failed before it had a socket (the proxy refused the tunnel). */
function endedAtOnce(error: ClusterError): ExecSocket {
  const stdout = new Readable({ read() {} });
  const stderr = new Readable({ read() {} });
  stdout.push(null);
  stderr.push(null);
  return { stdout, stderr, stdin: null, ended: Promise.resolve({ kind: "failed", error }), kill: () => undefined };
}

/** The exit status of a channel-3 Status: Success is 0, NonZeroExitCode carries its code; any other Failure is an error. */
export function readExitStatus(text: string): ExecSocketEnd {
  let doc: {
    status?: string;
    reason?: string;
    message?: string;
    details?: { causes?: Array<{ reason?: string; message?: string }> };
  };
  try {
    doc = JSON.parse(text) as typeof doc;
  } catch {
    return { kind: "failed", error: new CutStreamError(`the exec's status frame is not JSON: ${text.slice(0, 200)}`) };
  }
  if (doc.status === "Success") return { kind: "exit", code: 0 };
  if (doc.reason === "NonZeroExitCode") {
    const cause = doc.details?.causes?.find((c) => c.reason === "ExitCode");
    const code = Number(cause?.message);
    if (Number.isInteger(code) && code >= 0) return { kind: "exit", code };
  }
  return {
    kind: "failed",
    error: new ClusterError("other", `the exec failed in the pod: ${doc.message ?? text.slice(0, 200)}`),
  };
}

/** The typed error of a refused upgrade: 401/403/404 as any call; 5xx: the exec could not be set up, nothing ran. */
export function mapUpgradeRefusal(httpStatus: number, body: string): ClusterError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = { kind: "Status", message: body.trim() || undefined };
  }
  const error = mapStatusError(httpStatus, parsed, { verb: "create", resource: "pods/exec" });
  if (httpStatus >= 500 || httpStatus === 429)
    return new UnavailableError("exec-not-ready", `the exec could not be set up: ${error.message}`);
  if (httpStatus === 400 && /upgrade|protocol|websocket|spdy/i.test(error.message)) return refusesV5(error.message);
  if (httpStatus >= 200 && httpStatus < 300) return refusesV5(`it answered the upgrade with HTTP ${httpStatus}`);
  return error;
}

function refusesV5(why: string): ClusterError {
  return new ClusterError(
    "other",
    `the API server does not speak exec over WebSocket ${EXEC_PROTOCOL} (${why}): it needs Kubernetes 1.30 or later and a gateway that passes WebSocket upgrades; use --transport kubectl`,
  );
}
