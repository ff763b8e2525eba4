// The mill codec and framing: messages round-trip, the protocol's rules hold both ways, frames reassemble however they are split, and oversize is refused.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FrameReader, frameMessage } from "../../src/mill/frame-reader.js";
import { loadMillCodec } from "../../src/mill/mill-codec.js";
import { MillProtocolError } from "../../src/mill/mill-errors.js";
import { millMessage, TERMINAL_STATUS } from "../../src/mill/mill-messages.js";

describe("mill codec", () => {
  it("round-trips an event batch with a terminal, its artifact and a 64-bit seqno", async () => {
    const codec = await loadMillCodec();
    const message = millMessage("eventBatch", {
      epoch: "0011223344556677",
      events: [
        { seqno: 1, leaseId: "3abc-1", statusEvent: { status: 1, error: "", exitCode: 0 } },
        {
          seqno: 2 ** 40,
          leaseId: "3abc-1",
          attemptResult: {
            status: TERMINAL_STATUS.failed,
            error: "step 2 failed",
            exitCode: -1,
            logArtifact: { ref: "logs/3abc-1.log", hash: "sha256:00" },
          },
        },
      ],
    });
    assert.deepEqual(codec.decode(codec.encode(message)), message);
  });

  it("decodes what a Go peer would send: field numbers as the protocol gives them", async () => {
    const codec = await loadMillCodec();
    // Message{resume(2): Resume{epoch(1): "ab", ack_seqno(2): 300}} written by hand.
    const resume = Buffer.from([0x0a, 0x02, 0x61, 0x62, 0x10, 0xac, 0x02]);
    const payload = Buffer.concat([Buffer.from([0x12, resume.length]), resume]);
    assert.deepEqual(codec.decode(payload), millMessage("resume", { epoch: "ab", ackSeqno: 300 }));
  });

  it("ignores an unknown field inside a known message, as protobuf does", async () => {
    const codec = await loadMillCodec();
    // CancelAttempt{lease_id: "x", field 9 varint 7}.
    const cancel = Buffer.from([0x0a, 0x01, 0x78, 0x48, 0x07]);
    const payload = Buffer.concat([Buffer.from([0x4a, cancel.length]), cancel]);
    assert.deepEqual(codec.decode(payload), millMessage("cancelAttempt", { leaseId: "x", reason: "" }));
  });

  it("refuses a Message that sets no known field (an unknown field number alone) or two fields", async () => {
    const codec = await loadMillCodec();
    assert.throws(
      () => codec.decode(Buffer.from([0x72, 0x00])),
      (error: unknown) =>
        error instanceof MillProtocolError && error.violation === "invalid-message" && /sets none/.test(error.message),
    );
    assert.throws(
      () => codec.decode(Buffer.from([0x3a, 0x00, 0x42, 0x00])),
      /exactly one field; this one sets committed, releaseLease/,
    );
  });

  it("refuses bytes that are not protobuf with a typed error, never a crash", async () => {
    const codec = await loadMillCodec();
    assert.throws(
      () => codec.decode(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f])),
      (error: unknown) => error instanceof MillProtocolError && error.violation === "invalid-message",
    );
  });

  it("holds the protocol's rules: an empty epoch, a zero snapshot seqno, an event without a status, a terminal with a long error", async () => {
    const codec = await loadMillCodec();
    assert.throws(
      () => codec.encode(millMessage("hello", { protocolVersion: 1, arch: "amd64", labels: [], epoch: "" })),
      /epoch is empty/,
    );
    assert.throws(
      () => codec.encode(millMessage("nodeSnapshot", { seqno: 0, engines: {}, activeLeaseIds: [] })),
      /seqno must be above 0/,
    );
    assert.throws(
      () =>
        codec.encode(
          millMessage("eventBatch", {
            epoch: "e",
            events: [{ seqno: 1, leaseId: "l", attemptResult: { status: 0, error: "", exitCode: 0 } }],
          }),
        ),
      /status is unspecified/,
    );
    assert.throws(
      () =>
        codec.encode(
          millMessage("eventBatch", {
            epoch: "e",
            events: [{ seqno: 1, leaseId: "l", attemptResult: { status: 2, error: "x".repeat(65_537), exitCode: 0 } }],
          }),
        ),
      /over 65536 bytes/,
    );
    assert.throws(() => codec.encode(millMessage("eventBatch", { epoch: "e", events: [] })), /at least one event/);
  });
});

describe("mill framing", () => {
  it("reassembles frames split one byte at a time and frames joined in one chunk", () => {
    const frames = [
      frameMessage(Buffer.from("first")),
      frameMessage(Buffer.alloc(0)),
      frameMessage(Buffer.from("third")),
    ];
    const joined = Buffer.concat(frames);
    const reader = new FrameReader();
    const byByte = [...joined].flatMap((byte) => reader.push(Buffer.from([byte])).map((payload) => payload.toString()));
    assert.deepEqual(byByte, ["first", "", "third"]);
    assert.deepEqual(
      new FrameReader().push(joined).map((payload) => payload.toString()),
      ["first", "", "third"],
    );
  });

  it("refuses a frame announcing more than the limit as soon as its length is read", () => {
    const header = Buffer.alloc(4);
    header.writeUInt32BE(8 * 1024 * 1024 + 1);
    assert.throws(
      () => new FrameReader().push(header),
      (error: unknown) => error instanceof MillProtocolError && error.violation === "oversized-frame",
    );
    assert.throws(() => frameMessage(Buffer.alloc(11), 10), /over the 10-byte limit/);
  });
});
