// The mill's framing: a 4-byte big-endian length, then that many bytes of Message; written one frame per WebSocket message, read as a byte stream.
import { MillProtocolError } from "./mill-errors.js";
import { MAX_FRAME_BYTES } from "./mill-messages.js";

/** One frame: the length prefix and `payload`; throws MillProtocolError `oversized-frame` past the limit. */
export function frameMessage(payload: Uint8Array, maxBytes = MAX_FRAME_BYTES): Buffer {
  if (payload.length > maxBytes)
    throw new MillProtocolError(
      "oversized-frame",
      `a message of ${payload.length} bytes is over the ${maxBytes}-byte limit`,
    );
  const frame = Buffer.allocUnsafe(4 + payload.length);
  frame.writeUInt32BE(payload.length, 0);
  frame.set(payload, 4);
  return frame;
}

/** Reassembles payloads from chunks however the sender split or joined its frames. */
export class FrameReader {
  private buffered: Buffer = Buffer.alloc(0);

  constructor(private readonly maxBytes = MAX_FRAME_BYTES) {}

  /** The payloads `chunk` completes, in order; throws MillProtocolError `oversized-frame` as soon as a length over the limit is read. */
  push(chunk: Uint8Array): Buffer[] {
    this.buffered = this.buffered.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.buffered, chunk]);
    const payloads: Buffer[] = [];
    while (this.buffered.length >= 4) {
      const length = this.buffered.readUInt32BE(0);
      if (length > this.maxBytes)
        throw new MillProtocolError(
          "oversized-frame",
          `a frame announces ${length} bytes, over the ${this.maxBytes}-byte limit`,
        );
      if (this.buffered.length < 4 + length) break;
      payloads.push(this.buffered.subarray(4, 4 + length));
      this.buffered = this.buffered.subarray(4 + length);
    }
    return payloads;
  }

  /** Bytes held of a frame not yet complete. */
  get pendingBytes(): number {
    return this.buffered.length;
  }
}
