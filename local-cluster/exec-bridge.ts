// Serves `pods/NAME/exec` over WebSocket by bridging the channel protocol to `podman exec`, with backpressure both ways.

import type { ChildProcess } from "node:child_process";
import { STATUS_CODES, type IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import { ApiError, badRequest, buildFailureStatus, notFound } from "./api-error.js";
import {
  CLOSE,
  RESIZE,
  STATUS,
  STDERR,
  STDIN,
  STDOUT,
  buildExitStatus,
  buildInternalErrorStatus,
  encodeFrame,
  selectProtocol,
} from "./exec-protocol.js";
import type { FaultInjector, ParsedFaultConfig } from "./faults.js";
import type { Kubelet } from "./kubelet.js";
import type { PodmanClient } from "./podman.js";
import { listLongRunningContainers } from "./podman-pod-yaml.js";
import type { ObjectStore } from "./store.js";

/** Stop reading the container's output while this many bytes wait to go out on the socket. */
const OUTPUT_HIGH_WATER = 4 * 1024 * 1024;
const OUTPUT_LOW_WATER = 1024 * 1024;

export interface ExecContext {
  store: ObjectStore;
  kubelet: Kubelet;
  faults: FaultInjector;
  podman: PodmanClient | undefined;
}

export interface ExecTarget {
  namespace: string;
  pod: string;
  /** Who asks (the refusal a WebSocket upgrade got is kept per user and pod for kubectl's SPDY retry). */
  user?: string;
}

/**
 * Answers an upgrade request with an HTTP error, then closes the connection. With `plain`, the body is text, which
 * kubectl reports as `unable to upgrade connection: <text>`; otherwise a Status, reported as `Error from server`.
 */
export function rejectUpgrade(socket: Duplex, error: ApiError, plain = false): void {
  const body = plain
    ? error.message
    : JSON.stringify(buildFailureStatus(error.code, error.reason, error.message, error.details));
  const type = plain ? "text/plain; charset=utf-8" : "application/json";
  socket.end(
    `HTTP/1.1 ${error.code} ${STATUS_CODES[error.code] ?? "Error"}\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** How long after a refused WebSocket upgrade kubectl's SPDY retry of the same exec gets the same refusal. */
const FALLBACK_WINDOW_MS = 10_000;

export class ExecServer {
  private readonly wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: 64 * 1024 * 1024,
    handleProtocols: (protocols) => selectProtocol(protocols) ?? false,
  });
  private readonly sessions = new Set<WebSocket>();
  /** The last refusal per pod, so kubectl's SPDY fallback for the same exec is refused with the same message. */
  private readonly refusals = new Map<string, { error: ApiError; plain: boolean; at: number }>();

  constructor(private readonly ctx: ExecContext) {}

  /** Validates the request, applies exec faults, and upgrades; every refusal is an HTTP error kubectl can report. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, target: ExecTarget, url: URL): void {
    const podKey = formatRefusalKey(target);
    const upgrade = String(req.headers.upgrade ?? "").toLowerCase();
    if (upgrade !== "websocket") {
      const recent = this.refusals.get(podKey);
      this.refusals.delete(podKey);
      if (recent && Date.now() - recent.at < FALLBACK_WINDOW_MS)
        return rejectUpgrade(socket, recent.error, recent.plain);
      const message =
        "the local cluster serves exec over WebSocket only (kubectl >= 1.30, or KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true on 1.29); SPDY is not supported";
      return rejectUpgrade(socket, badRequest(message), true);
    }
    try {
      const offered = String(req.headers["sec-websocket-protocol"] ?? "")
        .split(",")
        .map((s) => s.trim());
      if (!selectProtocol(offered))
        throw badRequest(
          `no supported exec sub-protocol offered (want v5.channel.k8s.io or v4.channel.k8s.io, got ${offered.join(", ") || "none"})`,
        );
      const command = url.searchParams.getAll("command");
      if (command.length === 0) throw badRequest("you must specify at least 1 command");
      const pod = this.ctx.store.get("pods", target.namespace, target.pod);
      if (!pod) throw notFound("pods", "", target.pod);
      const containerName = url.searchParams.get("container") ?? pod.spec?.containers?.[0]?.name;
      if (!listLongRunningContainers(pod.spec).some((c: any) => c.name === containerName))
        throw badRequest(`container ${containerName} is not valid for pod ${target.pod}`);
      const status = (pod.status?.containerStatuses ?? []).find((s: any) => s.name === containerName);
      const container = this.ctx.kubelet.findContainer(target.namespace, target.pod, containerName);
      if (!status?.state?.running || !container || !this.ctx.podman)
        throw badRequest(`container not found ("${containerName}")`);
      const refused = this.ctx.faults.take("execUpgradeRefused", command.join(" "));
      if (refused) {
        const code = refused.status ?? 500;
        const message =
          refused.message ??
          "error dialing backend: dial tcp 10.0.0.1:10250: connect: connection refused (local-cluster fault execUpgradeRefused)";
        throw new ApiError(code, code === 503 ? "ServiceUnavailable" : "InternalError", message);
      }
      const cut = this.ctx.faults.take("execStreamCut", command.join(" "));
      const wantStdin = url.searchParams.get("stdin") === "true" || url.searchParams.get("stdin") === "1";
      const podman = this.ctx.podman;
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        this.sessions.add(ws);
        ws.on("close", () => this.sessions.delete(ws));
        const child = podman.spawnExec(container, command, wantStdin);
        bridgeExec(ws, child, { command, stdin: wantStdin, cut });
      });
    } catch (e) {
      const error = e instanceof ApiError ? e : new ApiError(500, "InternalError", String(e));
      if (error.code === 404) return rejectUpgrade(socket, error);
      const plainError = new ApiError(error.code, "InternalError", error.message);
      this.refusals.set(podKey, { error: plainError, plain: true, at: Date.now() });
      rejectUpgrade(socket, plainError, true);
    }
  }

  /**
   * Refuses an exec its user may not make (a 403 Status, which kubectl prints as `Error from server (Forbidden)`).
   * kubectl answers a refused WebSocket upgrade with a SPDY retry; with no SPDY here, that retry gets this same
   * refusal, so the message names the verb the WebSocket lacked instead of SPDY.
   */
  refuseUpgrade(req: IncomingMessage, socket: Duplex, target: ExecTarget, error: ApiError): void {
    if (String(req.headers.upgrade ?? "").toLowerCase() === "websocket")
      this.refusals.set(formatRefusalKey(target), { error, plain: false, at: Date.now() });
    rejectUpgrade(socket, error);
  }

  /** Drops every open exec connection (server going down or stopping). */
  closeAll(): void {
    for (const ws of this.sessions) ws.terminate();
    this.sessions.clear();
  }
}

function formatRefusalKey(target: ExecTarget): string {
  return `${target.user ?? ""} ${target.namespace}/${target.pod}`;
}

interface BridgeOptions {
  command: string[];
  stdin: boolean;
  cut: ParsedFaultConfig["execStreamCut"] | undefined;
}

/**
 * Copies WebSocket stdin frames into the child and its stdout/stderr into frames, pausing whichever side is ahead,
 * then sends the exit Status. When the client goes away (or a cut fault fires) the child is detached: its stdin is
 * closed and its output discarded, so the process in the container keeps running as it would on a real node.
 */
function bridgeExec(ws: WebSocket, child: ChildProcess, opts: BridgeOptions): void {
  let detached = false;
  let pendingOut = 0;
  let outputBytes = 0;
  let outputPaused = false;
  const outputs = [child.stdout!, child.stderr!];
  let cutTimer: NodeJS.Timeout | undefined;
  let waitingForDrain = false;

  const detach = (): void => {
    if (detached) return;
    detached = true;
    if (cutTimer) clearTimeout(cutTimer);
    if (!child.stdin!.destroyed) child.stdin!.end();
    for (const o of outputs) o.resume();
  };

  const cutNow = (): void => {
    if (detached) return;
    if (opts.cut?.mode === "clean") ws.close(1000);
    else ws.terminate();
    detach();
  };

  if (opts.cut?.afterSeconds !== undefined) cutTimer = setTimeout(cutNow, opts.cut.afterSeconds * 1000);

  const send = (channel: number, chunk: Buffer): void => {
    if (detached || ws.readyState !== ws.OPEN) return;
    if (opts.cut?.afterBytes !== undefined && outputBytes + chunk.length >= opts.cut.afterBytes) {
      const allowed = Math.max(0, opts.cut.afterBytes - outputBytes);
      if (allowed > 0) ws.send(encodeFrame(channel, chunk.subarray(0, allowed)));
      outputBytes += allowed;
      cutNow();
      return;
    }
    outputBytes += chunk.length;
    pendingOut += chunk.length;
    ws.send(encodeFrame(channel, chunk), { binary: true }, () => {
      pendingOut -= chunk.length;
      if (outputPaused && pendingOut <= OUTPUT_LOW_WATER && !detached) {
        outputPaused = false;
        for (const o of outputs) o.resume();
      }
    });
    if (pendingOut > OUTPUT_HIGH_WATER && !outputPaused) {
      outputPaused = true;
      for (const o of outputs) o.pause();
    }
  };

  child.stdout!.on("data", (d: Buffer) => send(STDOUT, d));
  child.stderr!.on("data", (d: Buffer) => send(STDERR, d));
  // A command that exits without reading all of its stdin never drains it: read the socket on (what stdin still gets
  // is dropped, as a kubelet drops it), else the client's close frame goes unread and its close handshake waits 30 s.
  const stopTakingStdin = (): void => {
    if (!waitingForDrain) return;
    waitingForDrain = false;
    ws.resume();
  };
  child.stdin!.on("error", stopTakingStdin);
  child.on("exit", stopTakingStdin);
  if (!opts.stdin) child.stdin!.end();

  ws.on("message", (data: Buffer, isBinary: boolean) => {
    if (detached || !isBinary || data.length === 0) return;
    const channel = data[0];
    if (channel === STDIN && opts.stdin) {
      if (child.stdin!.writableEnded || child.stdin!.destroyed || child.exitCode !== null || child.signalCode !== null)
        return;
      if (!child.stdin!.write(data.subarray(1)) && !waitingForDrain) {
        waitingForDrain = true;
        ws.pause();
        child.stdin!.once("drain", () => {
          waitingForDrain = false;
          ws.resume();
        });
      }
    } else if (channel === CLOSE && data[1] === STDIN) {
      child.stdin!.end();
    } else if (channel === RESIZE) {
      // no TTY: nothing to resize
    }
  });
  ws.on("close", detach);
  ws.on("error", detach);

  child.on("error", (e) => {
    if (detached) return;
    ws.send(encodeFrame(STATUS, JSON.stringify(buildInternalErrorStatus(`podman exec failed to start: ${e.message}`))));
    ws.close(1000);
    detach();
  });
  child.on("close", (code, signal) => {
    if (detached) return;
    if (cutTimer) clearTimeout(cutTimer);
    const exitCode = code ?? (signal ? 128 + 9 : 1);
    if (ws.readyState === ws.OPEN) {
      ws.send(encodeFrame(STATUS, JSON.stringify(buildExitStatus(exitCode, opts.command))));
      ws.close(1000);
    }
    detached = true;
  });
}
