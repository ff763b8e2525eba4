// One stream follower's connection (NDJSON over HTTP, or a WebSocket) with back-pressure: bounded bytes in flight, and a follower that takes nothing for the stall timeout is dropped with a last word that says why.
import type { ServerResponse } from "node:http";
import type { WebSocket } from "ws";
import { formatDuration } from "../core/duration.js";
import type { FollowerBudget, StreamKind, StreamTransport } from "./follower-budget.js";

/** Where a stream's source writes: whole NDJSON lines, only as fast as the follower takes them. */
export interface FollowerOutput {
  /** Aborted once the follower is gone (it left, or was dropped): the source stops reading. */
  readonly signal: AbortSignal;
  /**
   * Resolves with how many bytes (at most `most`) may be sent now, held for this follower until its next send or room
   * call, once its own bound and the shared one leave room; 0 once it is gone.
   */
  room(most: number): Promise<number>;
  /** Sends whole lines, each ended by \n (the room last given, or more for one line longer than it). */
  send(lines: Buffer): void;
}

/** The WebSocket close code of a follower dropped for taking nothing for the stall timeout. */
export const STALLED_CLOSE_CODE = 4008;
/** Less room than this is waited out rather than filled by small reads (unless the follower's bound is smaller). */
const MIN_ROOM = 16 * 1024;

/** What a connection does with bytes; `done` is called once they are out of the process. */
interface Wire {
  write(lines: Buffer, done: () => void): void;
  /** The normal end of the stream. */
  end(): void;
  /** The end of a dropped follower: a last line or close frame that says why. */
  drop(error: string, message: string): void;
  /** Cuts the connection, dropping what is still buffered. */
  cut(): void;
}

/** One follower: counts its bytes in flight against its bound and the budget's, and drops it when it stalls. */
class FollowerConnection implements FollowerOutput {
  readonly #controller = new AbortController();
  readonly #budget: FollowerBudget;
  readonly #key: string;
  readonly #wire: Wire;
  #buffered = 0;
  /** Room given by the last room call and not yet sent: held in the budget so that no other follower takes it meanwhile. */
  #reserved = 0;
  #lastProgress = Date.now();
  #stallTimer: NodeJS.Timeout | undefined;
  /** Ended (normally or dropped): no more sends; a stall from here cuts the connection. */
  #ending = false;
  #dropped = false;
  #closed = false;

  constructor(budget: FollowerBudget, key: string, wire: Wire) {
    this.#budget = budget;
    this.#key = key;
    this.#wire = wire;
    budget.join(key);
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  async room(most: number): Promise<number> {
    this.#unreserve();
    const { maxBufferedBytes } = this.#budget.settings;
    const least = Math.min(MIN_ROOM, maxBufferedBytes, most);
    for (;;) {
      if (this.#ending || this.#closed) return 0;
      const room = Math.min(most, maxBufferedBytes - this.#buffered, this.#budget.room);
      if (room >= least) {
        this.#reserved = room;
        this.#budget.reserve(room);
        return room;
      }
      await this.#budget.whenReleased(this.#controller.signal);
    }
  }

  send(lines: Buffer): void {
    if (this.#ending || this.#closed || lines.length === 0) return;
    if (this.#buffered === 0) this.#lastProgress = Date.now();
    this.#buffered += lines.length;
    this.#budget.reserve(lines.length);
    this.#unreserve();
    this.#armStallTimer();
    this.#wire.write(lines, () => this.#taken(lines.length));
  }

  /** The source is done: the stream ends once the follower has taken everything. */
  end(): void {
    if (this.#ending || this.#closed) return;
    this.#ending = true;
    this.#controller.abort();
    this.#wire.end();
  }

  /** The connection closed (whoever closed it): everything it held is given back. */
  closed(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#controller.abort();
    clearTimeout(this.#stallTimer);
    this.#unreserve();
    this.#budget.release(this.#buffered);
    this.#buffered = 0;
    this.#budget.leave(this.#key);
  }

  #unreserve(): void {
    const reserved = this.#reserved;
    this.#reserved = 0;
    this.#budget.release(reserved);
  }

  #taken(bytes: number): void {
    if (this.#closed) return;
    this.#buffered -= bytes;
    this.#lastProgress = Date.now();
    this.#budget.release(bytes);
  }

  #armStallTimer(): void {
    if (this.#stallTimer !== undefined || this.#closed) return;
    const { stallTimeoutMs } = this.#budget.settings;
    this.#stallTimer = setTimeout(
      () => {
        this.#stallTimer = undefined;
        if (this.#closed || this.#buffered === 0) return;
        if (Date.now() - this.#lastProgress < stallTimeoutMs) {
          this.#armStallTimer();
          return;
        }
        this.#stalled(stallTimeoutMs);
      },
      Math.max(1, this.#lastProgress + stallTimeoutMs - Date.now()),
    );
    this.#stallTimer.unref();
  }

  /** A first stall drops the follower with a last word (it has one more stall timeout to take it); a stall after that, or after the stream's end, cuts it. */
  #stalled(stallTimeoutMs: number): void {
    const first = !this.#dropped;
    this.#dropped = true;
    if (first) this.#budget.countDropped(this.#key);
    if (!first || this.#ending) {
      this.#wire.cut();
      return;
    }
    this.#ending = true;
    this.#controller.abort();
    this.#wire.drop(
      "FollowerStalled",
      `dropped: this follower read nothing for ${formatDuration(stallTimeoutMs)} (serve --follower-stall-timeout); reconnect and read faster`,
    );
    this.#lastProgress = Date.now();
    this.#armStallTimer();
  }
}

/** A stream's source: sends to the output until its stream is complete (logs) or the follower is gone (resolves either way). */
export type Follow = (output: FollowerOutput) => Promise<void>;

/** Runs `follow` into the connection, then ends it normally (a source that failed is told to `warn` and ends it too). */
function pump(connection: FollowerConnection, follow: Follow, warn: (message: string) => void): void {
  follow(connection).then(
    () => connection.end(),
    (error: unknown) => {
      warn(`a stream's source failed: ${error instanceof Error ? error.message : String(error)}`);
      connection.end();
    },
  );
}

/** Streams to an NDJSON response (headers already sent); a dropped follower's last line is {"error":"FollowerStalled","message":...}. */
export function followOverNdjson(
  res: ServerResponse,
  stream: StreamKind,
  follow: Follow,
  budget: FollowerBudget,
  warn: (message: string) => void,
): void {
  const connection = new FollowerConnection(budget, keyOf(stream, "ndjson"), {
    write: (lines, done) => void res.write(lines, () => done()),
    end: () => res.end(),
    drop: (error, message) => res.end(`${JSON.stringify({ error, message })}\n`),
    cut: () => res.destroy(),
  });
  res.on("close", () => connection.closed());
  pump(connection, follow, warn);
}

/** Streams to a WebSocket, a text message per line; a normal close (1000) at the stream's end, 4008 with a reason for a dropped follower. */
export function followOverWebSocket(
  ws: WebSocket,
  stream: StreamKind,
  follow: Follow,
  budget: FollowerBudget,
  warn: (message: string) => void,
  endReason: string,
): void {
  const connection = new FollowerConnection(budget, keyOf(stream, "websocket"), {
    write(lines, done) {
      let start = 0;
      for (let end = lines.indexOf(10); end >= 0; start = end + 1, end = lines.indexOf(10, start)) {
        const last = lines.indexOf(10, end + 1) < 0;
        ws.send(lines.subarray(start, end), { binary: false }, last ? () => done() : undefined);
      }
    },
    end: () => ws.close(1000, endReason),
    // A close reason is at most 123 bytes.
    drop: (error, message) => ws.close(STALLED_CLOSE_CODE, `${error}: ${message}`.slice(0, 123)),
    cut: () => ws.terminate(),
  });
  ws.on("close", () => connection.closed());
  ws.on("error", () => connection.closed());
  pump(connection, follow, warn);
}

function keyOf(stream: StreamKind, transport: StreamTransport): string {
  return `${stream}/${transport}`;
}
