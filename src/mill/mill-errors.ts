// The mill protocol's typed errors: a frame or message that breaks the protocol, and a refused dial.

/** What was wrong with a frame or a message; a violation ends the session (both sides treat it so). */
export type MillViolation = "oversized-frame" | "malformed-frame" | "invalid-message" | "handshake-failed";

/** A frame or message that breaks spindle.mill.v1: the session ends and is dialled again. */
export class MillProtocolError extends Error {
  override readonly name = "MillProtocolError";
  constructor(
    readonly violation: MillViolation,
    message: string,
  ) {
    super(message);
  }
}
