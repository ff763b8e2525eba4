// Reads the protobuf wire format: the fields of one message as (number, wire type, raw value), nothing typed yet.

export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_LENGTH = 2;
export const WIRE_FIXED32 = 5;

/** One field occurrence: a varint as a bigint, a fixed or length-delimited value as its bytes. */
export type WireField =
  | { readonly number: number; readonly wireType: typeof WIRE_VARINT; readonly value: bigint }
  | {
      readonly number: number;
      readonly wireType: typeof WIRE_FIXED64 | typeof WIRE_LENGTH | typeof WIRE_FIXED32;
      readonly value: Buffer;
    };

export class ProtobufError extends Error {
  override readonly name = "ProtobufError";
}

/** Reads a varint at `offset`; returns it and the offset after it. */
export function readVarint(buf: Buffer, offset: number): { value: bigint; next: number } {
  let value = 0n;
  let shift = 0n;
  for (let at = offset; at < buf.length; at++) {
    const byte = buf[at]!;
    value |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return { value, next: at + 1 };
    shift += 7n;
    if (shift > 63n) throw new ProtobufError(`varint longer than 10 bytes at offset ${offset}`);
  }
  throw new ProtobufError(`truncated varint at offset ${offset}`);
}

/** Every field of one message, in the order they appear (a repeated field appears once per element). */
export function readFields(buf: Buffer): WireField[] {
  const fields: WireField[] = [];
  let at = 0;
  while (at < buf.length) {
    const key = readVarint(buf, at);
    at = key.next;
    const number = Number(key.value >> 3n);
    const wireType = Number(key.value & 7n);
    if (number === 0) throw new ProtobufError(`field number 0 at offset ${at}`);
    if (wireType === WIRE_VARINT) {
      const v = readVarint(buf, at);
      at = v.next;
      fields.push({ number, wireType, value: v.value });
    } else if (wireType === WIRE_LENGTH) {
      const length = readVarint(buf, at);
      at = length.next;
      const end = at + Number(length.value);
      if (end > buf.length) throw new ProtobufError(`field ${number} runs past the end of its message`);
      fields.push({ number, wireType, value: buf.subarray(at, end) });
      at = end;
    } else if (wireType === WIRE_FIXED64 || wireType === WIRE_FIXED32) {
      const end = at + (wireType === WIRE_FIXED64 ? 8 : 4);
      if (end > buf.length) throw new ProtobufError(`field ${number} runs past the end of its message`);
      fields.push({ number, wireType, value: buf.subarray(at, end) });
      at = end;
    } else {
      throw new ProtobufError(`unsupported wire type ${wireType} (field ${number})`);
    }
  }
  return fields;
}

/** The varints packed into one length-delimited field (a packed repeated scalar). */
export function readPackedVarints(buf: Buffer): bigint[] {
  const values: bigint[] = [];
  for (let at = 0; at < buf.length;) {
    const v = readVarint(buf, at);
    values.push(v.value);
    at = v.next;
  }
  return values;
}
