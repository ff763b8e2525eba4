// A stand-in for spindle's mill, written from the protocol: a WebSocket server (ws:// or wss://) speaking framed spindle.mill.v1 that keeps the mill's rules (seqno cursor and gaps, the cancel deadline, snapshot reconciliation) and records everything.
import { createServer, type Server } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";
import { FrameReader, frameMessage } from "../../src/mill/frame-reader.js";
import { loadMillCodec, type MillCodec } from "../../src/mill/mill-codec.js";
import {
  millMessage,
  TERMINAL_STATUS,
  type MillBodies,
  type MillKind,
  type AttemptResult,
  type MillMessage,
  type ReserveResult,
  type ReserveSeat,
  type SecretPair,
} from "../../src/mill/mill-messages.js";

export interface StandInMillOptions {
  readonly token: string;
  /** false: never Ack (the outbox then keeps everything, for replay tests). */
  readonly ack?: boolean;
  /** The cancel deadline (the mill's is 10 s). */
  readonly cancelDeadlineMs?: number;
  /** Serve wss:// with this certificate and key (PEM) instead of ws://. */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
}

/** One message as the stand-in received it. */
export interface Received {
  readonly at: number;
  readonly connection: number;
  readonly message: MillMessage;
}

const STATUS_WORDS = Object.fromEntries(
  Object.entries(TERMINAL_STATUS).map(([word, value]) => [value, word]),
) as Record<number, string>;

export class StandInMill {
  readonly received: Received[] = [];
  /** Rule breaks the real mill would end the session (and count toward quarantine) for. */
  readonly violations: string[] = [];
  /** Leases the mill would fail itself on reconciliation (missing from a snapshot while placed). */
  readonly failedByMill: string[] = [];
  /** Applied events, by lease: "running", then one terminal word. */
  readonly statuses = new Map<string, string[]>();
  readonly terminals = new Map<string, AttemptResult>();
  /** The durable cursor, by epoch. */
  readonly cursors = new Map<string, number>();
  readonly #server: Server;
  readonly #wss: WebSocketServer;
  #codec!: MillCodec;
  #socket: WebSocket | undefined;
  #connection = 0;
  #epoch = "";
  #lastSnapshotSeqno = 0;
  readonly #placed = new Set<string>();
  readonly #waiters = new Set<() => void>();
  ackEnabled: boolean;

  private constructor(readonly options: StandInMillOptions) {
    this.ackEnabled = options.ack ?? true;
    this.#server = options.tls ? createTlsServer({ cert: options.tls.cert, key: options.tls.key }) : createServer();
    this.#wss = new WebSocketServer({ noServer: true });
    this.#server.on("upgrade", (request, socket, head) => {
      if (request.headers.authorization !== `Bearer ${options.token}`) {
        socket.end("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n");
        return;
      }
      this.#wss.handleUpgrade(request, socket, head, (ws) => this.#accept(ws));
    });
  }

  static async start(options: StandInMillOptions): Promise<StandInMill> {
    const mill = new StandInMill(options);
    mill.#codec = await loadMillCodec();
    await new Promise<void>((resolve) => mill.#server.listen(0, "127.0.0.1", resolve));
    return mill;
  }

  get url(): string {
    return `${this.options.tls ? "wss" : "ws"}://127.0.0.1:${(this.#server.address() as AddressInfo).port}/mill`;
  }

  get connections(): number {
    return this.#connection;
  }

  get connected(): boolean {
    return this.#socket !== undefined;
  }

  /** Messages of one kind received, oldest first. */
  messages<K extends MillKind>(kind: K): Array<MillBodies[K]> {
    return this.received
      .filter((entry) => entry.message.kind === kind)
      .map((entry) => entry.message.body as MillBodies[K]);
  }

  /** Live log lines of a lease, parsed. */
  liveLines(leaseId: string): Array<Record<string, unknown>> {
    return this.messages("liveLog")
      .filter((log) => log.leaseId === leaseId)
      .map((log) => JSON.parse(Buffer.from(log.rawJson).toString("utf8")) as Record<string, unknown>);
  }

  /** Resolves once `check` holds (re-checked on every message), or rejects after `timeoutMs`. */
  waitFor<T>(check: () => T | undefined | false, timeoutMs = 30_000, what = "a condition"): Promise<T> {
    return new Promise((resolve, reject) => {
      const attempt = (): boolean => {
        const value = check();
        if (value === undefined || value === false) return false;
        this.#waiters.delete(attempt);
        clearTimeout(timer);
        resolve(value);
        return true;
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(attempt);
        reject(new Error(`stand-in mill: timed out after ${timeoutMs} ms waiting for ${what}`));
      }, timeoutMs);
      if (!attempt()) this.#waiters.add(attempt);
    });
  }

  /** Offers a workflow; resolves with the executor's answer. */
  async reserve(seat: Omit<ReserveSeat, "ttlSeconds"> & { readonly ttlSeconds?: number }): Promise<ReserveResult> {
    const before = this.received.length;
    this.send(millMessage("reserveSeat", { ttlSeconds: 45, ...seat }));
    const result = await this.waitFor(
      () =>
        this.received
          .slice(before)
          .find((entry) => entry.message.kind === "reserveResult" && entry.message.body.leaseId === seat.leaseId)
          ?.message.body as ReserveResult | undefined,
      10_000,
      `ReserveResult ${seat.leaseId}`,
    );
    return result;
  }

  /** Commits a lease; resolves "committed" or the rejection the executor sent instead. */
  async commit(leaseId: string, secrets: readonly SecretPair[] = []): Promise<"committed" | ReserveResult> {
    const before = this.received.length;
    this.send(millMessage("commitLease", { leaseId, secrets }));
    const answer = await this.waitFor(
      () =>
        this.received
          .slice(before)
          .find(
            (entry) =>
              (entry.message.kind === "committed" || entry.message.kind === "reserveResult") &&
              entry.message.body.leaseId === leaseId,
          )?.message,
      10_000,
      `Committed ${leaseId}`,
    );
    if (answer.kind === "committed") {
      this.#placed.add(leaseId);
      return "committed";
    }
    return answer.body as ReserveResult;
  }

  /** Sends CancelAttempt; resolves with the times (ms after sending) of its CancelAck and its terminal, or rejects past the deadline as the mill would quarantine. */
  async cancel(leaseId: string, reason = "workflow destroyed"): Promise<{ ackMs: number; terminalMs: number }> {
    const sent = Date.now();
    const before = this.received.length;
    this.send(millMessage("cancelAttempt", { leaseId, reason }));
    const deadline = this.options.cancelDeadlineMs ?? 10_000;
    try {
      const ack = await this.waitFor(
        () =>
          this.received
            .slice(before)
            .find((entry) => entry.message.kind === "cancelAck" && entry.message.body.leaseId === leaseId),
        deadline,
        `CancelAck ${leaseId}`,
      );
      await this.waitFor(
        () => this.terminals.get(leaseId),
        deadline - (Date.now() - sent),
        `the terminal of ${leaseId}`,
      );
      return { ackMs: ack.at - sent, terminalMs: Date.now() - sent };
    } catch (error) {
      this.violations.push(
        `cancel deadline: ${leaseId} not acked and done within ${deadline} ms (the mill quarantines)`,
      );
      throw error;
    }
  }

  release(leaseId: string): void {
    this.send(millMessage("releaseLease", { leaseId }));
  }

  send(message: MillMessage): void {
    this.sendRaw(frameMessage(this.#codec.encode(message)));
  }

  /** Sends bytes as one binary frame, whatever they are (malformed-frame tests). */
  sendRaw(bytes: Uint8Array): void {
    if (!this.#socket) throw new Error("stand-in mill: no executor connected");
    this.#socket.send(bytes, { binary: true });
  }

  /** Stops reading the executor's socket (a slow mill): its sends pile up in its buffers. */
  pauseReading(): void {
    this.#socket?.pause();
  }

  resumeReading(): void {
    this.#socket?.resume();
  }

  /** Drops the executor's socket without a close handshake, as a network cut would. */
  dropConnection(): void {
    this.#socket?.terminate();
    this.#socket = undefined;
  }

  async close(): Promise<void> {
    this.#socket?.terminate();
    for (const client of this.#wss.clients) client.terminate();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(ws: WebSocket): void {
    this.#connection += 1;
    const connection = this.#connection;
    this.#socket?.terminate();
    this.#socket = ws;
    this.#lastSnapshotSeqno = 0;
    const reader = new FrameReader();
    let helloed = false;
    ws.on("message", (data: Buffer) => {
      try {
        for (const payload of reader.push(data)) {
          const message = this.#codec.decode(payload);
          this.received.push({ at: Date.now(), connection, message });
          if (!helloed) {
            if (message.kind !== "hello" || message.body.protocolVersion !== 1)
              throw new Error(`expected Hello of version 1, got ${message.kind}`);
            helloed = true;
            this.#epoch = message.body.epoch;
            this.send(millMessage("resume", { epoch: this.#epoch, ackSeqno: this.cursors.get(this.#epoch) ?? 0 }));
          } else this.#apply(message);
        }
      } catch (error) {
        this.violations.push(`connection ${connection}: ${error instanceof Error ? error.message : String(error)}`);
        ws.terminate();
      }
      for (const waiter of [...this.#waiters]) waiter();
    });
    ws.on("close", () => {
      if (this.#socket === ws) this.#socket = undefined;
      for (const waiter of [...this.#waiters]) waiter();
    });
  }

  #apply(message: MillMessage): void {
    if (message.kind === "nodeSnapshot") {
      if (message.body.seqno <= this.#lastSnapshotSeqno)
        throw new Error(`snapshot seqno went from ${this.#lastSnapshotSeqno} to ${message.body.seqno}`);
      this.#lastSnapshotSeqno = message.body.seqno;
      for (const leaseId of this.#placed) {
        if (!this.terminals.has(leaseId) && !message.body.activeLeaseIds.includes(leaseId)) {
          this.failedByMill.push(leaseId);
          this.#placed.delete(leaseId);
        }
      }
      return;
    }
    if (message.kind !== "eventBatch") return;
    if (message.body.epoch !== this.#epoch)
      throw new Error(`batch epoch ${message.body.epoch} is not the session's ${this.#epoch}`);
    let cursor = this.cursors.get(this.#epoch) ?? 0;
    const seen = new Set<string>();
    for (const event of message.body.events) {
      if (event.seqno <= cursor) continue;
      if (event.seqno !== cursor + 1) throw new Error(`seqno gap: ${event.seqno} after ${cursor}`);
      cursor = event.seqno;
      if (this.terminals.has(event.leaseId) || seen.has(event.leaseId)) {
        if (event.attemptResult && !this.#placed.has(event.leaseId) && !this.statuses.has(event.leaseId)) continue;
        throw new Error(`event ${event.seqno} for ${event.leaseId} after its terminal`);
      }
      const words = this.statuses.get(event.leaseId) ?? [];
      if (event.statusEvent) words.push("running");
      if (event.attemptResult) {
        if (event.attemptResult.logArtifact && !event.attemptResult.logArtifact.hash.startsWith("sha256:"))
          throw new Error(`artifact hash ${event.attemptResult.logArtifact.hash} is not sha256:`);
        words.push(STATUS_WORDS[event.attemptResult.status] ?? "?");
        this.terminals.set(event.leaseId, event.attemptResult);
        seen.add(event.leaseId);
        this.#placed.delete(event.leaseId);
      }
      this.statuses.set(event.leaseId, words);
    }
    this.cursors.set(this.#epoch, cursor);
    if (this.ackEnabled) this.send(millMessage("ack", { epoch: this.#epoch, upToSeqno: cursor }));
  }
}
