// Encodes and decodes spindle.mill.v1 Messages with protobufjs from our own mill.proto (read and parsed on first use), checking the protocol's rules both ways.
import { readFileSync } from "node:fs";
import { MillProtocolError } from "./mill-errors.js";
import {
  MAX_ERROR_BYTES,
  MILL_KINDS,
  type AttemptResult,
  type MillEvent,
  type MillMessage,
  type StatusEvent,
} from "./mill-messages.js";

/** Turns messages into frame payloads and back; every message is checked against the protocol's rules. */
export interface MillCodec {
  /** The protobuf bytes of `message` (no length prefix); throws MillProtocolError for a message that breaks a rule. */
  encode(message: MillMessage): Uint8Array;
  /** The message in `payload`; throws MillProtocolError `invalid-message` for bytes that are not one valid Message. */
  decode(payload: Uint8Array): MillMessage;
  /** The bytes of `event` encoded alone as an Event: what spindle's executor counts against its outbox's cap. */
  eventSize(event: MillEvent): number;
}

interface ProtoType {
  fromObject(object: Record<string, unknown>): unknown;
  encode(message: unknown): { finish(): Uint8Array };
  decode(bytes: Uint8Array): Record<string, unknown>;
  toObject(message: unknown, options: Record<string, unknown>): Record<string, unknown>;
}

let loaded: Promise<MillCodec> | undefined;

/** The codec, built once: mill.proto beside this module (the build copies it next to the bundle too). */
export function loadMillCodec(): Promise<MillCodec> {
  loaded ??= (async () => {
    const protobuf = (await import("protobufjs")).default; // ~75 ms of CPU, for the executor command only
    const text = readFileSync(new URL("./mill.proto", import.meta.url), "utf8");
    const root = protobuf.parse(text, { keepCase: false }).root;
    return createMillCodec(
      root.lookupType("spindle.mill.v1.Message") as unknown as ProtoType,
      root.lookupType("spindle.mill.v1.Event") as unknown as ProtoType,
    );
  })();
  return loaded;
}

function createMillCodec(type: ProtoType, eventType: ProtoType): MillCodec {
  return {
    eventSize(event) {
      return eventType.encode(eventType.fromObject(event as unknown as Record<string, unknown>)).finish().length;
    },
    encode(message) {
      const problem = checkMessage(message);
      if (problem !== undefined)
        throw new MillProtocolError("invalid-message", `refusing to send ${message.kind}: ${problem}`);
      return type.encode(type.fromObject({ [message.kind]: message.body })).finish();
    },
    decode(payload) {
      let decoded: Record<string, unknown>;
      try {
        decoded = type.decode(payload);
      } catch (error) {
        throw new MillProtocolError(
          "invalid-message",
          `not a Message: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      const set = MILL_KINDS.filter((kind) => decoded[kind] !== null && decoded[kind] !== undefined);
      if (set.length !== 1)
        throw new MillProtocolError(
          "invalid-message",
          `a Message sets exactly one field; this one sets ${set.length === 0 ? "none" : set.join(", ")}`,
        );
      const kind = set[0]!;
      const object = type.toObject(decoded, {
        longs: Number,
        enums: Number,
        defaults: true,
        arrays: true,
        objects: true,
      });
      const message = { kind, body: dropNulls(object[kind]) } as MillMessage;
      const problem = checkMessage(message);
      if (problem !== undefined) throw new MillProtocolError("invalid-message", `${kind}: ${problem}`);
      return message;
    },
  };
}

/** protobufjs gives an unset message field as null with `defaults`; the typed shapes say absent. */
function dropNulls(value: unknown): unknown {
  if (value === null || typeof value !== "object" || value instanceof Uint8Array) return value;
  if (Array.isArray(value)) return value.map(dropNulls);
  return Object.fromEntries(
    Object.entries(value).flatMap(([key, inner]) => (inner === null ? [] : [[key, dropNulls(inner)]])),
  );
}

/** The protocol's validation rules for one message (as protovalidate holds both sides to them); undefined when it keeps them. */
export function checkMessage(message: MillMessage): string | undefined {
  switch (message.kind) {
    case "hello":
      return message.body.epoch === "" ? "epoch is empty" : undefined;
    case "resume":
      return message.body.epoch === "" ? "epoch is empty" : undefined;
    case "nodeSnapshot":
      return message.body.seqno > 0 ? undefined : "seqno must be above 0";
    case "reserveSeat":
      if (message.body.leaseId === "") return "lease_id is empty";
      return message.body.targetEngine === "" ? "target_engine is empty" : undefined;
    case "commitLease":
    case "committed":
    case "releaseLease":
    case "cancelAttempt":
    case "cancelAck":
    case "reserveResult":
      return message.body.leaseId === "" ? "lease_id is empty" : undefined;
    case "eventBatch":
      if (message.body.events.length === 0) return "an event batch holds at least one event";
      for (const event of message.body.events) {
        const problem = checkEvent(event);
        if (problem !== undefined) return `event ${event.seqno}: ${problem}`;
      }
      return undefined;
    case "liveLog":
      return message.body.rawJson.length === 0 ? "raw_json is empty" : undefined;
    case "ack":
      return undefined;
  }
}

function checkEvent(event: MillEvent): string | undefined {
  if (!(event.seqno > 0)) return "seqno must be above 0";
  if ((event.statusEvent === undefined) === (event.attemptResult === undefined))
    return "an event carries exactly one of status_event and attempt_result";
  const payload: StatusEvent | AttemptResult = event.statusEvent ?? event.attemptResult!;
  if (payload.status === 0) return "status is unspecified";
  if (Buffer.byteLength(payload.error) > MAX_ERROR_BYTES) return `error is over ${MAX_ERROR_BYTES} bytes`;
  const artifact = event.attemptResult?.logArtifact;
  if (artifact !== undefined && (artifact.ref === "" || artifact.hash === ""))
    return "a log artifact needs a ref and a hash";
  return undefined;
}
