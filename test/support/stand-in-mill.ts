// A stand-in for spindle's mill, written from the protocol: a WebSocket server (ws:// or wss://) speaking framed spindle.mill.v1 that keeps the mill's rules (seqno cursor and gaps, the cancel deadline and its re-send after a reconnect, snapshot reconciliation) and records everything.
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

/** How one connection ended, as the stand-in saw it (1006: dropped without a close frame). */
export interface Closed {
  readonly connection: number;
  readonly code: number;
  readonly reason: string;
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
  /** Leases the mill would fail itself on reconciliation (missing from a snapshot while placed, or placed under another epoch). */
  readonly failedByMill: string[] = [];
  /** Leases the mill would record cancelled itself: missing from a snapshot while a cancel was pending. */
  readonly cancelledByMill: string[] = [];
  /** Ids a snapshot listed that this mill does not hold (never placed, released, or already given their terminal); each was sent CancelAttempt "lease is not owned by this mill", as the mill does. */
  readonly foreignListed: string[] = [];
  /** Every event seqno applied, in order (dense from 1 within an epoch when the executor keeps the rules). */
  readonly applied: number[] = [];
  /** Events received again at or below the cursor (replays: skipped, as the mill skips them). */
  readonly replayed: Array<{ readonly connection: number; readonly seqno: number }> = [];
  /** How each connection ended. */
  readonly closes: Closed[] = [];
  /** What Resume said on each connection (the durable cursor then). */
  readonly resumes: Array<{ readonly connection: number; readonly ackSeqno: number }> = [];
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
  /** Committed leases not yet given their terminal, with the epoch they were committed under. */
  readonly #placed = new Map<string, string>();
  /** Reservations accepted and not yet committed, released or expired. */
  readonly #reserved = new Set<string>();
  /** Leases sent a CancelAttempt whose terminal has not been applied yet (re-sent after a reconnect). */
  readonly #cancelPending = new Map<string, string>();
  readonly #waiters = new Set<() => void>();
  /** Connections dropped by dropConnection: bytes ws still drains from them at close are not read. */
  readonly #cut = new Set<number>();
  ackEnabled: boolean;
  /** true: Hello is not answered (a mill slow to Resume), so the executor stays in its handshake. */
  holdResume = false;
  /** true: upgrades are answered 503 (a mill that is down), so the executor stays disconnected. */
  refusing = false;

  private constructor(readonly options: StandInMillOptions) {
    this.ackEnabled = options.ack ?? true;
    this.#server = options.tls ? createTlsServer({ cert: options.tls.cert, key: options.tls.key }) : createServer();
    this.#wss = new WebSocketServer({ noServer: true });
    this.#server.on("upgrade", (request, socket, head) => {
      if (this.refusing) {
        socket.end("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
        return;
      }
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
      this.#reserved.delete(leaseId);
      this.#placed.set(leaseId, this.#epoch);
      return "committed";
    }
    return answer.body as ReserveResult;
  }

  /** Sends CancelAttempt; resolves with the times (ms after sending) of its CancelAck and its terminal, or rejects past the deadline as the mill would quarantine. */
  async cancel(leaseId: string, reason = "workflow destroyed"): Promise<{ ackMs: number; terminalMs: number }> {
    const sent = Date.now();
    const before = this.received.length;
    if (!this.terminals.has(leaseId)) this.#cancelPending.set(leaseId, reason);
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
    this.#reserved.delete(leaseId);
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

  /** Drops the executor's socket without a close handshake, as a network cut would: what it had sent and was not read yet is lost. */
  dropConnection(): void {
    this.#cut.add(this.#connection);
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
      if (this.#cut.has(connection)) return;
      try {
        for (const payload of reader.push(data)) {
          const message = this.#codec.decode(payload);
          this.received.push({ at: Date.now(), connection, message });
          if (!helloed) {
            if (message.kind !== "hello" || message.body.protocolVersion !== 1)
              throw new Error(`expected Hello of version 1, got ${message.kind}`);
            helloed = true;
            this.#epoch = message.body.epoch;
            if (this.holdResume) continue;
            const ackSeqno = this.cursors.get(this.#epoch) ?? 0;
            this.resumes.push({ connection, ackSeqno });
            this.send(millMessage("resume", { epoch: this.#epoch, ackSeqno }));
            for (const [leaseId, reason] of this.#cancelPending)
              this.send(millMessage("cancelAttempt", { leaseId, reason }));
          } else this.#apply(message, connection);
        }
      } catch (error) {
        this.violations.push(`connection ${connection}: ${error instanceof Error ? error.message : String(error)}`);
        ws.terminate();
      }
      for (const waiter of [...this.#waiters]) waiter();
    });
    ws.on("close", (code, reason) => {
      this.closes.push({ connection, code, reason: reason.toString() });
      if (this.#socket === ws) this.#socket = undefined;
      for (const waiter of [...this.#waiters]) waiter();
    });
  }

  #apply(message: MillMessage, connection: number): void {
    if (message.kind === "reserveResult") {
      if (message.body.accepted) this.#reserved.add(message.body.leaseId);
      return;
    }
    if (message.kind === "nodeSnapshot") return this.#reconcile(message.body.seqno, message.body.activeLeaseIds);
    if (message.kind !== "eventBatch") return;
    if (message.body.epoch !== this.#epoch)
      throw new Error(`batch epoch ${message.body.epoch} is not the session's ${this.#epoch}`);
    // Checked whole before anything is applied: a batch that breaks a rule applies nothing, as the mill's transaction.
    let cursor = this.cursors.get(this.#epoch) ?? 0;
    const fresh = [];
    const ended = new Set<string>();
    for (const event of message.body.events) {
      if (event.seqno <= cursor) {
        this.replayed.push({ connection, seqno: event.seqno });
        continue;
      }
      if (event.seqno !== cursor + 1) throw new Error(`seqno gap: ${event.seqno} after ${cursor}`);
      cursor = event.seqno;
      // The mill skips an event for a lease whose terminal an earlier batch applied; an executor must never send one.
      if (this.terminals.has(event.leaseId) || ended.has(event.leaseId))
        throw new Error(`event ${event.seqno} for ${event.leaseId} after its terminal`);
      const artifact = event.attemptResult?.logArtifact;
      if (artifact && !artifact.hash.startsWith("sha256:"))
        throw new Error(`artifact hash ${artifact.hash} is not sha256:`);
      if (event.attemptResult) ended.add(event.leaseId);
      fresh.push(event);
    }
    for (const event of fresh) {
      this.applied.push(event.seqno);
      const words = this.statuses.get(event.leaseId) ?? [];
      if (event.statusEvent) words.push("running");
      if (event.attemptResult) {
        words.push(STATUS_WORDS[event.attemptResult.status] ?? "?");
        this.terminals.set(event.leaseId, event.attemptResult);
        this.#placed.delete(event.leaseId);
        this.#reserved.delete(event.leaseId);
        this.#cancelPending.delete(event.leaseId);
      }
      this.statuses.set(event.leaseId, words);
    }
    this.cursors.set(this.#epoch, cursor);
    if (this.ackEnabled) this.send(millMessage("ack", { epoch: this.#epoch, upToSeqno: cursor }));
  }

  /** The mill's reconciliation on each snapshot: what it placed must be listed until its terminal; what it does not hold gets CancelAttempt. */
  #reconcile(seqno: number, listed: readonly string[]): void {
    if (seqno <= this.#lastSnapshotSeqno)
      throw new Error(`snapshot seqno went from ${this.#lastSnapshotSeqno} to ${seqno}`);
    this.#lastSnapshotSeqno = seqno;
    for (const [leaseId, epoch] of this.#placed) {
      if (epoch === this.#epoch && listed.includes(leaseId)) continue;
      (this.#cancelPending.has(leaseId) ? this.cancelledByMill : this.failedByMill).push(leaseId);
      this.#placed.delete(leaseId);
      this.#cancelPending.delete(leaseId);
    }
    // A reservation left out has expired or been released on the executor's side: the mill frees it.
    for (const leaseId of this.#reserved) if (!listed.includes(leaseId)) this.#reserved.delete(leaseId);
    for (const leaseId of listed) {
      if (this.#placed.has(leaseId) || this.#reserved.has(leaseId)) continue;
      this.foreignListed.push(leaseId);
      this.send(millMessage("cancelAttempt", { leaseId, reason: "lease is not owned by this mill" }));
    }
  }
}
