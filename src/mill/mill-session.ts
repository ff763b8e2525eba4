// The executor's side of spindle.mill.v1: dials the mill, holds seats and leases, runs committed ones through a LeaseLauncher, and reports through the durable outbox.
import {
  closeSync,
  existsSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import type { ClientOptions, WebSocket } from "ws";
import { describeError } from "../core/errors.js";
import { FrameReader, frameMessage } from "./frame-reader.js";
import type { MillCodec } from "./mill-codec.js";
import { MillProtocolError } from "./mill-errors.js";
import {
  MAX_BATCH_EVENTS,
  MAX_ERROR_BYTES,
  MAX_FRAME_BYTES,
  NONTERMINAL_STATUS,
  PROTOCOL_VERSION,
  REJECT_CLASS,
  TERMINAL_STATUS,
  millMessage,
  type AttemptResult,
  type CommitLease,
  type MillMessage,
  type ReserveSeat,
  type TerminalStatusName,
} from "./mill-messages.js";
import type { MillState } from "./mill-state.js";
import type { LogStore } from "./log-store.js";
import { formatLogLine, type SpindleLogLine } from "./log-lines.js";
import type {
  AcceptedOffer,
  LaunchedLease,
  LeaseLauncher,
  LeaseOutcome,
  LeaseProgress,
  LeftRun,
} from "./lease-launcher.js";

/** The session's clocks; every one configurable so tests run them short. */
export interface MillTimings {
  /** A NodeSnapshot this often while connected (spindle: 15 s). */
  readonly snapshotMs: number;
  /** The first wait before a redial, doubled after each failed session up to backoffMaxMs (1 s to 30 s). */
  readonly backoffMinMs: number;
  readonly backoffMaxMs: number;
  /** How long to wait for Resume after Hello. */
  readonly handshakeMs: number;
  /** A reservation's hold when ReserveSeat says ttl 0. */
  readonly defaultTtlMs: number;
  /** After a CancelAttempt, how long the run may take to stop before its terminal is sent anyway (the mill's deadline is 10 s). */
  readonly cancelGraceMs: number;
  /** Between tries to store a finished log. */
  readonly uploadRetryMs: number;
  /** At the end of a drain, how long to wait for the mill to acknowledge the last events. */
  readonly drainFlushMs: number;
  /** After closing on a protocol fault, how long the mill has to answer the close before the socket is cut. */
  readonly closeWaitMs: number;
}

export const DEFAULT_MILL_TIMINGS: MillTimings = {
  snapshotMs: 15_000,
  backoffMinMs: 1_000,
  backoffMaxMs: 30_000,
  handshakeMs: 10_000,
  defaultTtlMs: 60_000,
  cancelGraceMs: 5_000,
  uploadRetryMs: 5_000,
  drainFlushMs: 5_000,
  closeWaitMs: 1_000,
};

/** RFC 6455's close codes for the faults a frame can have. */
const CLOSE_PROTOCOL_ERROR = 1002;
const CLOSE_MESSAGE_TOO_BIG = 1009;
/** A close frame's reason holds at most 123 bytes. */
const CLOSE_REASON_BYTES = 123;

export interface MillSessionOptions {
  readonly url: string;
  readonly token: string;
  readonly labels: readonly string[];
  /** What Hello says of the architecture (GOARCH words: amd64, arm64); information for the mill. */
  readonly arch: string;
  readonly maxRuns: number;
  readonly state: MillState;
  readonly codec: MillCodec;
  readonly launcher: LeaseLauncher;
  readonly logStore: LogStore;
  /** Where each lease's log is written as it happens (`<dir>/<lease_id>.log`) before it is stored. */
  readonly logDir: string;
  readonly timings?: Partial<MillTimings>;
  /** Extra options for the WebSocket (--mill-ca's `ca`); `ws://` is the caller's decision (--insecure-mill). */
  readonly socketOptions?: ClientOptions;
  readonly warn: (message: string) => void;
  readonly observer?: MillObserver;
  /** Past this many bytes waiting in the socket's send buffer, live lines are dropped (default 8 MiB, a frame's most). */
  readonly liveLogBufferBytes?: number;
}

/** What metrics hear of the session. */
export interface MillObserver {
  reconnected(): void;
  terminal(status: TerminalStatusName): void;
}

type LeaseState = "reserved" | "running" | "finishing";

const FINISHED_REMEMBERED = 10_000;

interface Lease {
  readonly leaseId: string;
  state: LeaseState;
  accepted?: AcceptedOffer;
  ttl?: NodeJS.Timeout;
  launched?: LaunchedLease;
  cancelled: boolean;
  logFd?: number;
  /** Live lines not sent because the socket's send buffer was past its bound. */
  droppedLines: number;
  /** A continued run's log lines past its checkpoint, cut at restart (`at`): put back if the run is lost after all. */
  cutTail?: { readonly at: number; readonly bytes: Buffer };
}

/** Counts for /metrics. */
export interface MillStats {
  readonly seatsInUse: number;
  readonly maxRuns: number;
  readonly leases: Readonly<Record<LeaseState, number>>;
  readonly outboxDepth: number;
  /** Bytes the outbox holds, against its cap. */
  readonly outboxBytes: number;
  readonly connected: boolean;
}

/**
 * One executor process's session with its mill: connects (and reconnects, backing off) until `stop`; the runs go on
 * while it is disconnected. Construct, then `start`.
 */
export class MillSession {
  readonly #options: MillSessionOptions;
  readonly #timings: MillTimings;
  readonly #liveLogBufferBytes: number;
  readonly #leases = new Map<string, Lease>();
  /** The terminal seqno of each finished lease still to be listed in snapshots until it is sent. */
  readonly #terminalSeqnos = new Map<string, number>();
  /** Leases whose terminal this process queued (the latest FINISHED_REMEMBERED), so a late cancel does not queue a second. */
  readonly #finished = new Set<string>();
  readonly #stopped = new AbortController();
  #socket: WebSocket | undefined;
  /** The highest seqno sent on the current socket. */
  #sentSeqno = 0;
  #snapshotSeqno = 0;
  #draining = false;
  #connectLoop: Promise<void> | undefined;
  #finishing = new Set<Promise<void>>();
  #connectedOnce = false;

  constructor(options: MillSessionOptions) {
    this.#options = options;
    this.#timings = { ...DEFAULT_MILL_TIMINGS, ...options.timings };
    this.#liveLogBufferBytes = options.liveLogBufferBytes ?? MAX_FRAME_BYTES;
    mkdirSync(options.logDir, { recursive: true });
  }

  /**
   * Finishes what a previous process left, then dials: a run it left going is re-attached to (continued through the
   * launcher from its plan and last checkpoint, the lease's log cut back to that checkpoint); one the mill had
   * cancelled ends cancelled, its Job deleted; one without a plan (it stopped before the run's settings were made)
   * fails as runner-lost, its Job deleted; a log upload under way resumes.
   */
  start(): void {
    for (const stored of this.#options.state.listLeases()) {
      if (stored.state === "running" && stored.plan !== undefined && stored.cancelReason === undefined) {
        const { leaseId, record, plan, checkpoint } = stored;
        this.#resumeLease({ leaseId, record, plan, ...(checkpoint ? { checkpoint } : {}) });
        continue;
      }
      const lease: Lease = { leaseId: stored.leaseId, state: "finishing", cancelled: false, droppedLines: 0 };
      this.#leases.set(stored.leaseId, lease);
      if (stored.state === "running") {
        void this.#options.launcher.cleanUp(stored.leaseId, stored.record);
        // A cancel answered before the crash is the mill's last word: the run is not continued only to be stopped.
        const outcome: LeaseOutcome =
          stored.cancelReason !== undefined
            ? { status: "cancelled", exitCode: -1, error: `cancelled: ${stored.cancelReason}` }
            : {
                status: "failed",
                exitCode: -1,
                error: "runner-lost: the executor restarted before the run's settings were made; its Job was deleted",
              };
        this.#track(this.#finishLease(lease, outcome));
      } else this.#track(this.#storeAndQueue(lease, stored.terminal!));
    }
    this.#connectLoop = this.#runConnectLoop();
  }

  /** Continues a run a previous process left, its log file cut to the length it had at the run's last checkpoint. */
  #resumeLease(left: LeftRun): void {
    const lease: Lease = { leaseId: left.leaseId, state: "running", cancelled: false, droppedLines: 0 };
    this.#leases.set(left.leaseId, lease);
    const path = this.#logPath(left.leaseId);
    lease.logFd = openSync(path, "a", 0o600);
    // Lines past the checkpoint are logged again by the continued run: cut them so none is stored twice (kept aside
    // for a run that cannot be continued: then they are its last lines, put back before what the restart logged).
    const size = fstatSync(lease.logFd).size;
    const length = Math.min(left.checkpoint?.logLength ?? 0, size);
    lease.cutTail = { at: length, bytes: readFileSync(path).subarray(length, size) };
    ftruncateSync(lease.logFd, length);
    const launched = this.#options.launcher.resume(
      left,
      (line) => this.#onLine(lease, line),
      this.#progressOf(left.leaseId),
    );
    this.#watchRun(lease, launched);
  }

  /** Where a lease's run keeps its plan and checkpoints (the state database): what a restart continues it from. */
  #progressOf(leaseId: string): LeaseProgress {
    const { state, warn } = this.#options;
    return {
      plan: (text) => state.recordPlan(leaseId, text),
      checkpoint: (text, logLength) => {
        try {
          state.saveCheckpoint(leaseId, text, logLength);
        } catch (error) {
          warn(`lease ${leaseId}: could not keep the run's checkpoint: ${describeError(error)}`);
        }
      },
    };
  }

  #watchRun(lease: Lease, launched: LaunchedLease): void {
    lease.launched = launched;
    this.#track(
      launched.done.then((outcome) => {
        if (lease.state === "running")
          return this.#finishLease(lease, lease.cancelled ? { ...outcome, status: "cancelled" } : outcome);
      }),
    );
  }

  /** Counts for /metrics. */
  stats(): MillStats {
    const leases: Record<LeaseState, number> = { reserved: 0, running: 0, finishing: 0 };
    for (const lease of this.#leases.values()) leases[lease.state] += 1;
    return {
      seatsInUse: leases.reserved + leases.running,
      maxRuns: this.#options.maxRuns,
      leases,
      outboxDepth: this.#options.state.depth(),
      outboxBytes: this.#options.state.bytes(),
      connected: this.#socket !== undefined,
    };
  }

  /**
   * SIGTERM: new reservations are refused TRANSIENT; running leases have `timeoutMs` to finish, then are cancelled;
   * resolves once every terminal is queued (and sent, if the mill is there to take it within a moment).
   */
  async drain(timeoutMs: number): Promise<void> {
    this.#draining = true;
    this.#sendSnapshot();
    const runs = () =>
      [...this.#leases.values()].filter((lease) => lease.state === "running").map((lease) => lease.launched!.done);
    // The timer goes once the runs are over: a pending one would keep the process alive for the whole drain timeout.
    const over = new AbortController();
    await Promise.race([Promise.allSettled(runs()).then(() => over.abort()), delay(timeoutMs, over.signal)]);
    over.abort();
    for (const lease of this.#leases.values()) {
      if (lease.state === "reserved") this.#releaseSeat(lease);
      else if (lease.state === "running") this.#cancelRun(lease, "the executor is shutting down");
    }
    while (this.#finishing.size > 0) await Promise.allSettled([...this.#finishing]);
    // A moment for the mill to take and acknowledge the last terminals; what it does not is replayed at the next start.
    for (
      let waited = 0;
      waited < this.#timings.drainFlushMs && this.#socket !== undefined && this.#options.state.depth() > 0;
      waited += 50
    )
      await delay(50);
  }

  /** Closes the socket and stops redialling; runs still going are left as they are (call drain first). */
  async stop(): Promise<void> {
    this.#stopped.abort();
    // A seat reserved but not committed cannot be committed once we stop: its TTL timer must not keep the process up.
    for (const lease of this.#leases.values()) if (lease.state === "reserved") this.#onRelease(lease.leaseId);
    await this.#connectLoop;
  }

  async #runConnectLoop(): Promise<void> {
    let backoff = this.#timings.backoffMinMs;
    while (!this.#stopped.signal.aborted) {
      try {
        await this.#runSocket();
      } catch (error) {
        this.#options.warn(`mill session ended: ${describeError(error)}; dialling again in ${backoff} ms`);
      }
      if (this.#stopped.signal.aborted) break;
      await delay(backoff, this.#stopped.signal);
      // Never reset after a good session, as spindle's executor does: a mill that drops us at once is not hammered.
      backoff = Math.min(backoff * 2, this.#timings.backoffMaxMs);
    }
  }

  /** One socket's life: Hello, Resume, replay, snapshot, then messages until it closes. Rejects with why it ended. */
  async #runSocket(): Promise<void> {
    const { codec, state } = this.#options;
    // ws loads on the first dial: ~160 ms of CPU (with bufferutil) the other commands would pay.
    const { WebSocket } = await import("ws");
    return new Promise<void>((resolve, reject) => {
      const socket = new WebSocket(this.#options.url, {
        ...this.#options.socketOptions,
        headers: { authorization: `Bearer ${this.#options.token}` },
        maxPayload: MAX_FRAME_BYTES + 4,
      });
      // stop() closes this socket whatever its stage: one still waiting for Resume would otherwise run on once it came.
      const onStop = (): void => socket.close(1001, "executor stopping");
      this.#stopped.signal.addEventListener("abort", onStop, { once: true });
      const reader = new FrameReader();
      let resumed = false;
      let failure: Error | undefined;
      let snapshotTimer: NodeJS.Timeout | undefined;
      let closeTimer: NodeJS.Timeout | undefined;
      const cutAfterCloseWait = (): void => {
        closeTimer ??= setTimeout(() => socket.terminate(), this.#timings.closeWaitMs);
      };
      const handshakeTimer = setTimeout(
        () =>
          end(new MillProtocolError("handshake-failed", `no Resume within ${this.#timings.handshakeMs} ms of Hello`)),
        this.#timings.handshakeMs,
      );
      const end = (error: Error): void => {
        failure ??= error;
        if (!(error instanceof MillProtocolError) || socket.readyState !== socket.OPEN) return socket.terminate();
        // The fault is said in the close frame (1009 for a frame over the limit, 1002 for any other), so the mill can
        // log why; a mill that does not answer the close is cut.
        const code = error.violation === "oversized-frame" ? CLOSE_MESSAGE_TOO_BIG : CLOSE_PROTOCOL_ERROR;
        socket.close(code, truncateBytes(error.message, CLOSE_REASON_BYTES));
        cutAfterCloseWait();
      };
      socket.on("unexpected-response", (_request, response) =>
        end(
          new Error(
            `the mill answered the upgrade with HTTP ${response.statusCode}${response.statusCode === 401 ? " (token unknown, expired or quarantined)" : response.statusCode === 409 ? " (a session of this executor's name is live)" : ""}`,
          ),
        ),
      );
      socket.on("error", (error) => {
        // ws answers a message past maxPayload with a close of its own (1009): it goes out rather than being cut.
        if (socket.readyState !== socket.CLOSING) return end(error);
        failure ??= error;
        cutAfterCloseWait();
      });
      socket.on("open", () => {
        if (this.#connectedOnce) this.#options.observer?.reconnected();
        this.#connectedOnce = true;
        try {
          socket.send(
            frameMessage(
              codec.encode(
                millMessage("hello", {
                  protocolVersion: PROTOCOL_VERSION,
                  arch: this.#options.arch,
                  labels: [...this.#options.labels],
                  epoch: state.epoch,
                }),
              ),
            ),
          );
        } catch (error) {
          end(error as Error);
        }
      });
      socket.on("message", (data: Buffer | ArrayBuffer | Buffer[]) => {
        if (failure) return;
        try {
          const chunk = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
          for (const payload of reader.push(chunk)) {
            const message = codec.decode(payload);
            if (!resumed) {
              if (message.kind !== "resume")
                throw new MillProtocolError("handshake-failed", `expected Resume first, got ${message.kind}`);
              if (message.body.epoch !== state.epoch)
                throw new MillProtocolError(
                  "handshake-failed",
                  `Resume is for epoch ${message.body.epoch}, ours is ${state.epoch}`,
                );
              clearTimeout(handshakeTimer);
              resumed = true;
              this.#onResumed(socket, message.body.ackSeqno);
              snapshotTimer = setInterval(() => this.#sendSnapshot(), this.#timings.snapshotMs);
              continue;
            }
            this.#dispatch(message);
          }
        } catch (error) {
          // A malformed, oversized or out-of-place frame ends the session, as the mill ends its side on one.
          end(error as Error);
        }
      });
      socket.on("close", (code, reason) => {
        clearTimeout(handshakeTimer);
        clearTimeout(closeTimer);
        clearInterval(snapshotTimer);
        this.#stopped.signal.removeEventListener("abort", onStop);
        if (this.#socket === socket) this.#socket = undefined;
        if (this.#stopped.signal.aborted) resolve();
        else if (failure) reject(failure);
        else
          reject(new Error(`the mill closed the socket (${code}${reason.length > 0 ? ` ${reason.toString()}` : ""})`));
      });
    });
  }

  #onResumed(socket: WebSocket, ackSeqno: number): void {
    this.#options.state.trim(ackSeqno);
    this.#socket = socket;
    this.#sentSeqno = ackSeqno;
    this.#flushOutbox();
    this.#sendSnapshot();
  }

  #dispatch(message: MillMessage): void {
    switch (message.kind) {
      case "reserveSeat":
        void this.#onReserve(message.body);
        return;
      case "commitLease":
        this.#onCommit(message.body);
        return;
      case "releaseLease":
        this.#onRelease(message.body.leaseId);
        return;
      case "cancelAttempt":
        this.#onCancel(message.body.leaseId, message.body.reason);
        return;
      case "ack":
        if (message.body.epoch !== this.#options.state.epoch || message.body.upToSeqno === 0) return;
        this.#options.state.trim(message.body.upToSeqno);
        return;
      default:
        this.#options.warn(`ignored a ${message.kind} message: the mill does not send it`);
    }
  }

  async #onReserve(seat: ReserveSeat): Promise<void> {
    const reject = (reason: string, rejectClass: number): void =>
      void this.#send(
        millMessage("reserveResult", { leaseId: seat.leaseId, accepted: false, rejectReason: reason, rejectClass }),
      );
    if (this.#draining) return reject("draining: the executor is shutting down", REJECT_CLASS.transient);
    if (this.#leases.has(seat.leaseId))
      return void this.#send(
        millMessage("reserveResult", { leaseId: seat.leaseId, accepted: true, rejectReason: "", rejectClass: 0 }),
      );
    let checked: Awaited<ReturnType<LeaseLauncher["check"]>>;
    try {
      checked = await this.#options.launcher.check(seat);
    } catch (error) {
      checked = { ok: false, reason: describeError(error) };
    }
    if (!checked.ok) return reject(checked.reason, REJECT_CLASS.incompatible);
    // Checked again after the await: another reserve may have taken the last seat meanwhile.
    if (this.#draining) return reject("draining: the executor is shutting down", REJECT_CLASS.transient);
    if (this.stats().seatsInUse >= this.#options.maxRuns)
      return reject(
        `no free seat: ${this.#options.maxRuns} of ${this.#options.maxRuns} in use`,
        REJECT_CLASS.transient,
      );
    // A full outbox (the mill has not acknowledged for a while) would drop the new run's RUNNING: take no more until it drains.
    if (this.#options.state.isFull())
      return reject(
        `outbox full: ${this.#options.state.bytes()} bytes of events the mill has not acknowledged (cap ${this.#options.state.capBytes})`,
        REJECT_CLASS.transient,
      );
    const lease: Lease = {
      leaseId: seat.leaseId,
      state: "reserved",
      accepted: checked.accepted,
      cancelled: false,
      droppedLines: 0,
    };
    const ttlMs = seat.ttlSeconds > 0 ? seat.ttlSeconds * 1000 : this.#timings.defaultTtlMs;
    lease.ttl = setTimeout(() => this.#onRelease(seat.leaseId), ttlMs);
    this.#leases.set(seat.leaseId, lease);
    this.#send(
      millMessage("reserveResult", { leaseId: seat.leaseId, accepted: true, rejectReason: "", rejectClass: 0 }),
    );
    this.#sendSnapshot();
  }

  #onCommit(commit: CommitLease): void {
    const lease = this.#leases.get(commit.leaseId);
    if (lease === undefined) {
      this.#send(
        millMessage("reserveResult", {
          leaseId: commit.leaseId,
          accepted: false,
          rejectReason: "reservation missing or expired",
          rejectClass: REJECT_CLASS.transient,
        }),
      );
      return;
    }
    if (lease.state !== "reserved") {
      this.#send(millMessage("committed", { leaseId: commit.leaseId }));
      return;
    }
    clearTimeout(lease.ttl);
    lease.state = "running";
    lease.logFd = openSync(this.#logPath(lease.leaseId), "w", 0o600);
    const launched = this.#options.launcher.start(
      lease.accepted!,
      commit.secrets,
      (line) => this.#onLine(lease, line),
      this.#progressOf(lease.leaseId),
    );
    lease.accepted = undefined;
    const running = this.#options.state.startLease(lease.leaseId, launched.record, {
      status: NONTERMINAL_STATUS.running,
      error: "",
      exitCode: 0,
    });
    if (running === undefined)
      this.#options.warn(
        `lease ${lease.leaseId}: the outbox is past its cap (${this.#options.state.capBytes} bytes unacknowledged); its RUNNING status is dropped, its terminal will still be sent`,
      );
    this.#send(millMessage("committed", { leaseId: commit.leaseId }));
    this.#flushOutbox();
    this.#watchRun(lease, launched);
  }

  #onRelease(leaseId: string): void {
    const lease = this.#leases.get(leaseId);
    if (lease?.state !== "reserved") return;
    this.#releaseSeat(lease);
  }

  #releaseSeat(lease: Lease): void {
    clearTimeout(lease.ttl);
    this.#leases.delete(lease.leaseId);
    this.#sendSnapshot();
  }

  #onCancel(leaseId: string, reason: string): void {
    const lease = this.#leases.get(leaseId);
    if (lease === undefined && this.#finished.has(leaseId)) {
      // Its terminal is queued already: a second one could land in the same batch, which the mill takes for a violation.
      this.#send(millMessage("cancelAck", { leaseId }));
      return;
    }
    if (lease === undefined || lease.state === "reserved") {
      // As spindle's executor: a cancelled terminal first (the mill wants one even for a lease we never ran), then the ack.
      this.#queueTerminal(leaseId, { status: TERMINAL_STATUS.cancelled, error: reason, exitCode: 0 });
      this.#send(millMessage("cancelAck", { leaseId }));
      if (lease) this.#releaseSeat(lease);
      return;
    }
    // Kept before it is answered: a restart before the terminal must not continue a run the mill has cancelled.
    if (lease.state === "running") this.#options.state.recordCancel(leaseId, reason);
    this.#send(millMessage("cancelAck", { leaseId }));
    if (lease.state === "running") this.#cancelRun(lease, reason);
  }

  /** Stops a running lease; its terminal goes out when the run stops or, at the latest, after cancelGraceMs (the Job is deleted in the background). */
  #cancelRun(lease: Lease, reason: string): void {
    if (lease.cancelled) return;
    lease.cancelled = true;
    lease.launched!.cancel(reason);
    const timer = setTimeout(() => {
      if (lease.state === "running")
        this.#track(this.#finishLease(lease, { status: "cancelled", exitCode: -1, error: `cancelled: ${reason}` }));
    }, this.#timings.cancelGraceMs);
    void lease.launched!.done.finally(() => clearTimeout(timer));
  }

  #onLine(lease: Lease, line: SpindleLogLine): void {
    if (lease.logFd === undefined) return;
    const text = formatLogLine(line);
    writeSync(lease.logFd, text);
    const socket = this.#socket;
    if (!socket) return;
    // A mill that reads slower than the run writes: live lines are dropped (the stored log keeps them) rather than
    // queued without bound, so what is queued behind them (a terminal, a CancelAck) is not held up by them.
    if (socket.bufferedAmount > this.#liveLogBufferBytes) {
      if (lease.droppedLines === 0)
        this.#options.warn(
          `lease ${lease.leaseId}: the mill reads slower than the run writes (${socket.bufferedAmount} bytes unsent); live lines are dropped until it catches up, the stored log keeps every line`,
        );
      lease.droppedLines += 1;
      return;
    }
    this.#send(millMessage("liveLog", { leaseId: lease.leaseId, rawJson: Buffer.from(text) }));
  }

  /** The run is over: its log closed, stored, and its terminal queued. */
  async #finishLease(lease: Lease, outcome: LeaseOutcome): Promise<void> {
    lease.state = "finishing";
    if (lease.droppedLines > 0)
      this.#options.warn(
        `lease ${lease.leaseId}: ${lease.droppedLines} live lines dropped; its stored log has them all`,
      );
    if (lease.logFd !== undefined) closeSync(lease.logFd);
    lease.logFd = undefined;
    if (lease.cutTail && lease.cutTail.bytes.length > 0 && outcome.error.startsWith("runner-lost")) {
      // Not continued: the lines it printed before the restart are its last; what the restart logged follows them.
      const path = this.#logPath(lease.leaseId);
      const text = readFileSync(path);
      const { at, bytes } = lease.cutTail;
      writeFileSync(path, Buffer.concat([text.subarray(0, at), bytes, text.subarray(at)]), { mode: 0o600 });
    }
    lease.cutTail = undefined;
    const terminal: AttemptResult = {
      status: TERMINAL_STATUS[outcome.status],
      error: truncateBytes(outcome.error, MAX_ERROR_BYTES),
      exitCode: outcome.exitCode,
    };
    this.#options.state.markFinishing(lease.leaseId, terminal);
    this.#sendSnapshot();
    await this.#storeAndQueue(lease, terminal);
  }

  /** Stores the log (retrying until it is stored or the process stops), then queues the terminal with its artifact. */
  async #storeAndQueue(lease: Lease, terminal: AttemptResult): Promise<void> {
    const path = this.#logPath(lease.leaseId);
    // A run lost before its first line has no log: an empty one is stored, so the artifact's hash is never empty.
    if (!existsSync(path)) closeSync(openSync(path, "w", 0o600));
    for (;;) {
      try {
        const stored = await this.#options.logStore.put(lease.leaseId, path);
        this.#leases.delete(lease.leaseId);
        this.#queueTerminal(lease.leaseId, { ...terminal, logArtifact: stored }, true);
        return;
      } catch (error) {
        this.#options.warn(
          `lease ${lease.leaseId}: storing its log in ${this.#options.logStore.describe} failed: ${describeError(error)}; trying again in ${this.#timings.uploadRetryMs} ms`,
        );
        if (this.#stopped.signal.aborted) return;
        await delay(this.#timings.uploadRetryMs, this.#stopped.signal);
      }
    }
  }

  #queueTerminal(leaseId: string, terminal: AttemptResult, storedLease = false): void {
    const event = storedLease
      ? this.#options.state.finishLease(leaseId, terminal)
      : this.#options.state.append(leaseId, { attemptResult: terminal });
    this.#terminalSeqnos.set(leaseId, event.seqno);
    this.#finished.add(leaseId);
    if (this.#finished.size > FINISHED_REMEMBERED) this.#finished.delete(this.#finished.values().next().value!);
    const name = (Object.keys(TERMINAL_STATUS) as Array<keyof typeof TERMINAL_STATUS>).find(
      (key) => TERMINAL_STATUS[key] === terminal.status,
    );
    if (name !== undefined && name !== "unspecified") this.#options.observer?.terminal(name);
    this.#flushOutbox();
    this.#sendSnapshot();
  }

  /** Sends what the outbox holds past what this socket was sent, in batches of at most 128. */
  #flushOutbox(): void {
    const { state } = this.#options;
    while (this.#socket) {
      const events = state.listAfter(this.#sentSeqno, MAX_BATCH_EVENTS);
      if (events.length === 0) return;
      if (!this.#send(millMessage("eventBatch", { epoch: state.epoch, events }))) return;
      this.#sentSeqno = events.at(-1)!.seqno;
    }
  }

  /** Every lease held, and every finished one until its terminal went out on this socket. */
  #sendSnapshot(): void {
    if (!this.#socket) return;
    for (const [leaseId, seqno] of this.#terminalSeqnos)
      if (seqno <= this.#sentSeqno) this.#terminalSeqnos.delete(leaseId);
    const active = new Set([...this.#leases.keys(), ...this.#terminalSeqnos.keys()]);
    const stats = this.stats();
    const load = { seats: stats.seatsInUse / Math.max(1, this.#options.maxRuns) };
    const engines = Object.fromEntries(
      this.#options.launcher.engines.map((engine) => [engine, { available: !this.#draining, load }]),
    );
    this.#snapshotSeqno += 1;
    this.#send(millMessage("nodeSnapshot", { seqno: this.#snapshotSeqno, engines, activeLeaseIds: [...active] }));
  }

  /** Sends one message on the live socket; false when there is none or it failed (the session then ends). */
  #send(message: MillMessage): boolean {
    const socket = this.#socket;
    if (!socket || socket.readyState !== socket.OPEN) return false;
    try {
      socket.send(frameMessage(this.#options.codec.encode(message)));
      return true;
    } catch (error) {
      this.#options.warn(`sending ${message.kind} failed: ${describeError(error)}; ending the session`);
      socket.terminate();
      return false;
    }
  }

  #logPath(leaseId: string): string {
    return join(this.#options.logDir, `${leaseId.replace(/[^A-Za-z0-9_.-]/g, "-")}.log`);
  }

  #track(work: Promise<void>): void {
    const tracked = work
      .catch((error: unknown) => this.#options.warn(`internal: ${describeError(error)}`))
      .finally(() => this.#finishing.delete(tracked));
    this.#finishing.add(tracked);
  }
}

/** `text` cut to at most `maxBytes` of UTF-8, ending "..." when cut. */
function truncateBytes(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  return (
    Buffer.from(text)
      .subarray(0, maxBytes - 3)
      .toString("utf8")
      .replace(/\uFFFD$/, "") + "..."
  );
}

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
