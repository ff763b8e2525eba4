// Builds raw tar blocks byte by byte for the tar parser tests, independently of src/ (checksums computed here).

/** Fields of one raw header; numbers are written in octal unless a raw field buffer is given. */
export interface RawHeaderFields {
  readonly name?: string;
  readonly mode?: number;
  readonly size?: number;
  readonly mtime?: number;
  /** One character: "0" file, "5" directory, "x" PAX, "L" GNU long name... */
  readonly typeflag?: string;
  readonly linkname?: string;
  /** "ustar": POSIX "ustar\0" "00"; "gnu": "ustar  \0"; "v7": no magic. */
  readonly magic?: "ustar" | "gnu" | "v7";
  readonly prefix?: string;
  /** Raw bytes for the 12-byte size field (e.g. base-256), instead of `size`. */
  readonly sizeField?: Buffer;
  /** Raw bytes for the 12-byte mtime field, instead of `mtime`. */
  readonly mtimeField?: Buffer;
  /** Raw bytes for the 8-byte mode field, instead of `mode`. */
  readonly modeField?: Buffer;
  /** Bytes set at absolute offsets of the block after the fields (e.g. the old GNU isextended flag at 482). */
  readonly poke?: Readonly<Record<number, number>>;
  /** "unsigned" (the standard), "signed" (old tars), or a wrong value to store. */
  readonly checksum?: "unsigned" | "signed" | number;
}

/** One 512-byte header block. */
export function rawHeader(fields: RawHeaderFields): Buffer {
  const block = Buffer.alloc(512);
  block.write(fields.name ?? "", 0, 100, "utf8");
  writeField(block, 100, 8, fields.modeField, fields.mode ?? 0o644);
  writeOctal(block, 108, 8, 0);
  writeOctal(block, 116, 8, 0);
  writeField(block, 124, 12, fields.sizeField, fields.size ?? 0);
  writeField(block, 136, 12, fields.mtimeField, fields.mtime ?? 1_700_000_000);
  block.write(fields.typeflag ?? "0", 156, 1, "latin1");
  block.write(fields.linkname ?? "", 157, 100, "utf8");
  const magic = fields.magic ?? "ustar";
  if (magic === "ustar") block.write("ustar\u000000", 257, 8, "latin1");
  if (magic === "gnu") block.write("ustar  \u0000", 257, 8, "latin1");
  if (fields.prefix !== undefined) block.write(fields.prefix, 345, 155, "utf8");
  for (const [offset, byte] of Object.entries(fields.poke ?? {})) block[Number(offset)] = byte;
  block.fill(0x20, 148, 156);
  let unsigned = 0;
  let signed = 0;
  for (const byte of block) {
    unsigned += byte;
    signed += byte < 128 ? byte : byte - 256;
  }
  const checksum = fields.checksum ?? "unsigned";
  const stored = checksum === "unsigned" ? unsigned : checksum === "signed" ? signed : checksum;
  block.write(`${stored.toString(8).padStart(6, "0")}\u0000 `, 148, 8, "latin1");
  return block;
}

/** PAX records for an 'x' or 'g' body, each "LENGTH key=value\n" with LENGTH counting itself. */
export function paxBody(records: Readonly<Record<string, string>>): Buffer {
  const parts: Buffer[] = [];
  for (const [key, value] of Object.entries(records)) {
    const rest = Buffer.from(` ${key}=${value}\n`, "utf8");
    let length = rest.length + 1;
    while (String(length).length + rest.length !== length) length += 1;
    parts.push(Buffer.concat([Buffer.from(String(length)), rest]));
  }
  return Buffer.concat(parts);
}

/** `body` padded with zeros to a whole number of 512-byte blocks. */
export function padded(body: string | Buffer): Buffer {
  const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  return Buffer.concat([bytes, Buffer.alloc((512 - (bytes.length % 512)) % 512)]);
}

/** A member: header then padded body (size taken from the body unless given). */
export function rawEntry(fields: RawHeaderFields, body: string | Buffer = ""): Buffer {
  const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  return Buffer.concat([rawHeader({ size: bytes.length, ...fields }), padded(bytes)]);
}

/** The two zero blocks that end an archive. */
export function endOfArchive(): Buffer {
  return Buffer.alloc(1024);
}

/** A 12-byte base-256 field holding `value` (negative in two's complement), as GNU tar writes big numbers. */
export function base256(value: bigint, length = 12): Buffer {
  const field = Buffer.alloc(length);
  let rest = BigInt.asUintN(8 * length, value);
  for (let index = length - 1; index >= 0; index -= 1) {
    field[index] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  field[0] = (field[0] ?? 0) | 0x80;
  return field;
}

/** Splits `data` into chunks of random sizes between 1 and `max` bytes, from a seeded generator. */
export function randomChunks(data: Buffer, seed: number, max: number): Buffer[] {
  const chunks: Buffer[] = [];
  let state = seed;
  for (let offset = 0; offset < data.length;) {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    const size = 1 + (state % max);
    chunks.push(data.subarray(offset, offset + size));
    offset += size;
  }
  return chunks;
}

function writeField(block: Buffer, offset: number, length: number, raw: Buffer | undefined, value: number): void {
  if (raw === undefined) writeOctal(block, offset, length, value);
  else raw.copy(block, offset, 0, length);
}

function writeOctal(block: Buffer, offset: number, length: number, value: number): void {
  block.write(`${value.toString(8).padStart(length - 1, "0")}\u0000`, offset, length, "latin1");
}
