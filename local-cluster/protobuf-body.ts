// Decodes a Kubernetes protobuf request body (magic, runtime.Unknown envelope, typed message) into its JSON shape.

import { PROTO_MESSAGES, type ProtoType } from "./proto-messages.js";
import {
  ProtobufError,
  WIRE_FIXED32,
  WIRE_FIXED64,
  WIRE_LENGTH,
  WIRE_VARINT,
  readFields,
  readPackedVarints,
  type WireField,
} from "./protobuf-wire.js";

/** Every Kubernetes protobuf body starts with these four bytes, then a runtime.Unknown. */
export const PROTOBUF_MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

const META = "k8s.io.apimachinery.pkg.apis.meta.v1";

/** The proto package of each API group served (`rbac.authorization.k8s.io` → `rbac`). */
const PACKAGE_OF_GROUP: Readonly<Record<string, string>> = {
  "": "core",
  batch: "batch",
  "authentication.k8s.io": "authentication",
  "authorization.k8s.io": "authorization",
  "rbac.authorization.k8s.io": "rbac",
};

/** Proto field names that differ from the JSON names. */
const JSON_NAMES: Readonly<Record<string, string>> = { uID: "uid" };

/** The proto message of a kind, or undefined when the local cluster has no field table for it. */
export function findMessageName(apiVersion: string, kind: string): string | undefined {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/", 2) : ["", apiVersion];
  const pkg = PACKAGE_OF_GROUP[group!];
  const name = pkg ? `k8s.io.api.${pkg}.${version}.${kind}` : undefined;
  return name && PROTO_MESSAGES[name] ? name : undefined;
}

/** What the envelope says: the kind, and the message bytes. */
export interface ProtobufEnvelope {
  readonly apiVersion: string;
  readonly kind: string;
  readonly raw: Buffer;
}

/** Reads the magic and the runtime.Unknown envelope (typeMeta 1, raw 2, contentEncoding 3, contentType 4). */
export function readEnvelope(body: Buffer): ProtobufEnvelope {
  if (body.length < 4 || !body.subarray(0, 4).equals(PROTOBUF_MAGIC))
    throw new ProtobufError("the body does not start with the Kubernetes protobuf magic k8s\\0");
  let apiVersion = "";
  let kind = "";
  let raw: Buffer = Buffer.alloc(0);
  for (const field of readFields(body.subarray(4))) {
    if (field.wireType !== WIRE_LENGTH) continue;
    if (field.number === 1) {
      for (const meta of readFields(field.value)) {
        if (meta.wireType !== WIRE_LENGTH) continue;
        if (meta.number === 1) apiVersion = meta.value.toString("utf8");
        if (meta.number === 2) kind = meta.value.toString("utf8");
      }
    } else if (field.number === 2) raw = field.value;
    else if (field.number === 3 && field.value.length > 0)
      throw new ProtobufError(`unsupported content encoding ${field.value.toString("utf8")}`);
  }
  return { apiVersion, kind, raw };
}

/**
 * The JSON shape of a protobuf body, with apiVersion and kind set; throws ProtobufError when it is malformed and
 * returns undefined when the local cluster has no field table for its kind. Empty strings and zero times are left
 * out, as the API's `omitempty` JSON would (the encoder writes every non-pointer string, set or not).
 */
export function decodeProtobufBody(body: Buffer): Record<string, unknown> | undefined {
  const envelope = readEnvelope(body);
  const message = findMessageName(envelope.apiVersion, envelope.kind);
  if (!message) return undefined;
  return {
    apiVersion: envelope.apiVersion,
    kind: envelope.kind,
    ...(decodeMessage(message, envelope.raw) as Record<string, unknown>),
  };
}

/** Decodes one message by its field table; unknown field numbers are skipped, as protobuf readers do. */
export function decodeMessage(message: string, bytes: Buffer): unknown {
  const special = decodeSpecial(message, bytes);
  if (special !== NOT_SPECIAL) return special;
  const table = PROTO_MESSAGES[message];
  if (!table) throw new ProtobufError(`no field table for ${message}`);
  const fields = readFields(bytes);
  // A message that only wraps a list (ExtraValue: `items`) is that list in JSON.
  const numbers = Object.keys(table);
  if (numbers.length === 1 && table[1]?.[0] === "items" && table[1][2])
    return fields.filter((f) => f.number === 1).flatMap((f) => decodeValue("string", f));
  const out: Record<string, unknown> = {};
  for (const field of fields) {
    const spec = table[field.number];
    if (!spec) continue;
    const [protoName, type, repeated] = spec;
    const name = JSON_NAMES[protoName] ?? protoName;
    if (typeof type !== "string") {
      const entry = decodeMapEntry(type, field);
      const map = (out[name] ??= {}) as Record<string, unknown>;
      map[entry.key] = entry.value;
      continue;
    }
    const values = decodeValue(type, field);
    if (repeated) ((out[name] ??= []) as unknown[]).push(...values);
    else if (values.length > 0) out[name] = values.at(-1);
  }
  for (const [key, value] of Object.entries(out)) if (value === "" || value === null) delete out[key];
  return out;
}

const NOT_SPECIAL = Symbol("not special");

/** Time and MicroTime become RFC 3339 strings (null at the epoch, like Go's zero time), FieldsV1 its JSON. */
function decodeSpecial(message: string, bytes: Buffer): unknown {
  if (message === `${META}.Time` || message === `${META}.MicroTime`) {
    let seconds = 0n;
    let nanos = 0n;
    for (const f of readFields(bytes)) {
      if (f.wireType !== WIRE_VARINT) continue;
      if (f.number === 1) seconds = BigInt.asIntN(64, f.value);
      if (f.number === 2) nanos = BigInt.asIntN(32, f.value);
    }
    if (seconds === 0n && nanos === 0n) return null;
    const iso = new Date(Number(seconds) * 1000).toISOString();
    return message.endsWith(".Time")
      ? iso.replace(/\.\d+Z$/, "Z")
      : iso.replace(/\.\d+Z$/, `.${String(nanos / 1000n).padStart(6, "0")}Z`);
  }
  if (message === `${META}.FieldsV1`) {
    const raw = readFields(bytes).find((f) => f.number === 1 && f.wireType === WIRE_LENGTH);
    if (!raw || raw.wireType !== WIRE_LENGTH) return {};
    try {
      return JSON.parse(raw.value.toString("utf8"));
    } catch {
      throw new ProtobufError("FieldsV1 does not hold JSON");
    }
  }
  return NOT_SPECIAL;
}

/** The value(s) one field occurrence carries: a packed repeated scalar carries several. */
function decodeValue(type: string, field: WireField): unknown[] {
  switch (type) {
    case "string":
      return [expectLength(field, type).toString("utf8")];
    case "bytes":
      return [expectLength(field, type).toString("base64")];
    case "bool":
    case "int32":
    case "int64":
    case "uint32":
    case "uint64": {
      const raw =
        field.wireType === WIRE_LENGTH
          ? readPackedVarints(field.value)
          : field.wireType === WIRE_VARINT
            ? [field.value]
            : undefined;
      if (!raw) throw new ProtobufError(`field ${field.number} (${type}) has wire type ${field.wireType}`);
      return raw.map((v) => convertVarint(type, v));
    }
    case "double":
      return [field.wireType === WIRE_FIXED64 ? field.value.readDoubleLE(0) : unexpected(field, type)];
    case "float":
      return [field.wireType === WIRE_FIXED32 ? field.value.readFloatLE(0) : unexpected(field, type)];
    default:
      if (!type.startsWith("k8s.io.")) throw new ProtobufError(`unsupported field type ${type}`);
      return [decodeMessage(type, expectLength(field, type))];
  }
}

function convertVarint(type: string, v: bigint): boolean | number {
  if (type === "bool") return v !== 0n;
  if (type === "int32") return Number(BigInt.asIntN(32, v));
  if (type === "int64") return Number(BigInt.asIntN(64, v));
  return Number(v);
}

/** One entry of a map field: a message with the key as field 1 and the value as field 2. */
function decodeMapEntry(type: readonly ["map", string, string], field: WireField): { key: string; value: unknown } {
  const [, keyType, valueType] = type;
  let key = "";
  let value: unknown = valueType === "string" ? "" : undefined;
  for (const part of readFields(expectLength(field, "map entry"))) {
    if (part.number === 1) key = String(decodeValue(keyType, part)[0]);
    if (part.number === 2) value = decodeValue(valueType, part)[0];
  }
  return { key, value };
}

function expectLength(field: WireField, type: ProtoType): Buffer {
  if (field.wireType !== WIRE_LENGTH)
    throw new ProtobufError(
      `field ${field.number} (${String(type)}) has wire type ${field.wireType}, not length-delimited`,
    );
  return field.value;
}

function unexpected(field: WireField, type: string): never {
  throw new ProtobufError(`field ${field.number} (${type}) has wire type ${field.wireType}`);
}
