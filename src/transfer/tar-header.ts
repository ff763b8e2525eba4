// Decodes one 512-byte tar header block (POSIX ustar/pax, GNU, old GNU, v7): pure, no I/O.

/** Size of a tar block: headers are one block, bodies are padded to a whole number of blocks. */
export const BLOCK_SIZE = 512;

/** The archive is not a well-formed tar archive (bad checksum, bad number, malformed extended header). */
export class TarFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TarFormatError";
  }
}

/** Header formats told apart by the magic field; only ustar has a `prefix` field. */
export type TarFormat = "ustar" | "gnu" | "v7";

/**
 * One header block as stored, before any PAX or GNU long-name header is applied. `type` is the name the
 * entry policy knows ("file", "directory", "symlink", "link", "character-device", "block-device", "fifo",
 * "contiguous-file"), a meta header's ("pax-header", "pax-global-header", "gnu-long-path",
 * "gnu-long-link-path"), another GNU type ("gnu-sparse", "gnu-dumpdir", "gnu-multivolume",
 * "gnu-volume-label", "gnu-old-long-names"), or `typeflag 0xNN` for anything else.
 */
export interface TarHeaderBlock {
  /** `prefix/name` for ustar when prefix is set, else name; bytes up to the first NUL, decoded as UTF-8. */
  readonly name: string;
  /** The link target field ("" when empty). */
  readonly linkname: string;
  readonly type: string;
  /** Permission and set-id bits (the field masked with 0o7777). */
  readonly mode: number;
  /** The size field: bytes of data stored after the header for types that have data (see hasData). */
  readonly size: number;
  /** Modification time in seconds since the epoch (negative before 1970). */
  readonly mtime: number;
  readonly format: TarFormat;
  /** Old GNU sparse header ('S') whose sparse map continues in extension blocks right after it. */
  readonly sparseExtended: boolean;
}

const NAME = 0;
const NAME_LENGTH = 100;
const MODE = 100;
const SIZE = 124;
const MTIME = 136;
const CHECKSUM = 148;
const CHECKSUM_LENGTH = 8;
const TYPEFLAG = 156;
const LINKNAME = 157;
const MAGIC = 257;
const VERSION = 263;
const PREFIX = 345;
const PREFIX_LENGTH = 155;
/** Old GNU header: set when the sparse map goes on in extension blocks. */
const GNU_IS_EXTENDED = 482;
/** Old GNU sparse extension block: 21 entries of 24 bytes, then this flag. */
const SPARSE_EXTENSION_IS_EXTENDED = 504;

const TYPE_NAMES: Readonly<Record<number, string>> = {
  0x00: "file",
  0x30: "file",
  0x31: "link",
  0x32: "symlink",
  0x33: "character-device",
  0x34: "block-device",
  0x35: "directory",
  0x36: "fifo",
  0x37: "contiguous-file",
  0x78: "pax-header", // 'x'
  0x58: "pax-header", // 'X': the old Solaris extended header, same records
  0x67: "pax-global-header", // 'g'
  0x4c: "gnu-long-path", // 'L'
  0x4b: "gnu-long-link-path", // 'K'
  0x53: "gnu-sparse", // 'S'
  0x44: "gnu-dumpdir", // 'D'
  0x4d: "gnu-multivolume", // 'M'
  0x56: "gnu-volume-label", // 'V'
  0x4e: "gnu-old-long-names", // 'N'
};

/** True when the 512 bytes at `offset` are all zero (an end-of-archive block). */
export function isZeroBlock(block: Buffer, offset: number): boolean {
  for (let index = offset; index < offset + BLOCK_SIZE; index += 1) {
    if (block[index] !== 0) return false;
  }
  return true;
}

/**
 * Decodes the header block at `offset` (512 bytes must be there; the caller handles zero blocks first).
 * Throws TarFormatError when the checksum does not match (the unsigned sum, or the signed one old tars
 * wrote) or a numeric field holds something other than octal digits or a base-256 number.
 */
export function decodeHeaderBlock(block: Buffer, offset: number): TarHeaderBlock {
  verifyChecksum(block, offset);
  const typeflag = block[offset + TYPEFLAG] ?? 0;
  const format = formatOf(block, offset);
  let name = readString(block, offset + NAME, NAME_LENGTH);
  if (format === "ustar" && block[offset + PREFIX] !== 0)
    name = `${readString(block, offset + PREFIX, PREFIX_LENGTH)}/${name}`;
  let type = TYPE_NAMES[typeflag] ?? `typeflag 0x${typeflag.toString(16).padStart(2, "0")}`;
  // Old tars mark a directory by a trailing slash on a regular file entry.
  if (type === "file" && name.endsWith("/")) type = "directory";
  const size = readNumber(block, offset + SIZE, 12, "size");
  if (size < 0) throw new TarFormatError(`Invalid tar header: negative size ${size}`);
  return {
    name,
    linkname: readString(block, offset + LINKNAME, NAME_LENGTH),
    type,
    mode: readNumber(block, offset + MODE, 8, "mode") & 0o7777,
    size,
    mtime: readNumber(block, offset + MTIME, 12, "mtime"),
    format,
    sparseExtended: type === "gnu-sparse" && format === "gnu" && block[offset + GNU_IS_EXTENDED] !== 0,
  };
}

/** Whether an entry of `type` has `size` bytes of data after its header (links, devices, fifos and directories have none). */
export function hasData(type: string): boolean {
  switch (type) {
    case "link":
    case "symlink":
    case "character-device":
    case "block-device":
    case "directory":
    case "fifo":
      return false;
    default:
      return true;
  }
}

/** Whether an old GNU sparse extension block at `offset` is followed by another one. */
export function sparseExtensionContinues(block: Buffer, offset: number): boolean {
  return block[offset + SPARSE_EXTENSION_IS_EXTENDED] !== 0;
}

function verifyChecksum(block: Buffer, offset: number): void {
  // The checksum field itself counts as eight spaces.
  let unsigned = 8 * 0x20;
  for (let index = offset; index < offset + CHECKSUM; index += 1) unsigned += block[index] as number;
  for (let index = offset + CHECKSUM + CHECKSUM_LENGTH; index < offset + BLOCK_SIZE; index += 1)
    unsigned += block[index] as number;
  const stored = readOctal(block, offset + CHECKSUM, CHECKSUM_LENGTH, "checksum");
  if (stored === unsigned || stored === signedChecksum(block, offset)) return;
  throw new TarFormatError(
    `Invalid tar header: its checksum field says ${stored.toString(8)} but the block sums to ${unsigned.toString(8)}`,
  );
}

/** The checksum some old tars computed, with bytes taken as signed. */
function signedChecksum(block: Buffer, offset: number): number {
  let sum = 8 * 0x20;
  for (let index = offset; index < offset + BLOCK_SIZE; index += 1) {
    if (index >= offset + CHECKSUM && index < offset + CHECKSUM + CHECKSUM_LENGTH) continue;
    const byte = block[index] as number;
    sum += byte < 128 ? byte : byte - 256;
  }
  return sum;
}

function formatOf(block: Buffer, offset: number): TarFormat {
  const at = offset + MAGIC;
  // "ustar" then NUL (POSIX, version "00") or space (GNU: "ustar  \0").
  if (
    block[at] !== 0x75 ||
    block[at + 1] !== 0x73 ||
    block[at + 2] !== 0x74 ||
    block[at + 3] !== 0x61 ||
    block[at + 4] !== 0x72
  )
    return "v7";
  if (block[at + 5] === 0x00) return "ustar";
  if (block[at + 5] === 0x20 && block[offset + VERSION] === 0x20) return "gnu";
  return "v7";
}

/** The bytes of a field up to its first NUL (or its end), decoded as UTF-8. */
export function readString(block: Buffer, offset: number, length: number): string {
  let end = offset;
  const limit = offset + length;
  while (end < limit && block[end] !== 0) end += 1;
  return end === offset ? "" : block.toString("utf8", offset, end);
}

/** A numeric field: octal digits (after optional spaces, ended by NUL, space or the field's end) or base-256. */
export function readNumber(block: Buffer, offset: number, length: number, field: string): number {
  if (((block[offset] ?? 0) & 0x80) !== 0) return readBase256(block, offset, length, field);
  return readOctal(block, offset, length, field);
}

function readOctal(block: Buffer, offset: number, length: number, field: string): number {
  const end = offset + length;
  let index = offset;
  while (index < end && block[index] === 0x20) index += 1;
  let value = 0;
  for (; index < end; index += 1) {
    const byte = block[index] ?? 0;
    if (byte < 0x30 || byte > 0x37) break;
    value = value * 8 + (byte - 0x30);
  }
  // Like GNU tar: what follows the digits must end them; anything after that terminator is not looked at.
  if (index < end && block[index] !== 0 && block[index] !== 0x20) {
    throw new TarFormatError(`Invalid tar header: its ${field} field is not an octal number`);
  }
  if (!Number.isSafeInteger(value)) throw new TarFormatError(`Invalid tar header: its ${field} field is too large`);
  return value;
}

/**
 * GNU's base-256 form: the top bit of the first byte flags it, the rest of the field is a big-endian two's
 * complement number (negative when the first byte's second bit is set; only times may be negative).
 */
function readBase256(block: Buffer, offset: number, length: number, field: string): number {
  const first = block[offset] ?? 0;
  const negative = (first & 0x40) !== 0;
  // For a negative number, sum the inverted bits and take -(sum + 1): no precision is lost on the way.
  const flip = negative ? 0xff : 0x00;
  let value = (first ^ flip) & 0x7f;
  for (let index = offset + 1; index < offset + length; index += 1) {
    value = value * 256 + ((block[index] ?? 0) ^ flip);
    if (value > Number.MAX_SAFE_INTEGER)
      throw new TarFormatError(`Invalid tar header: its ${field} field is too large`);
  }
  return negative ? -(value + 1) : value;
}
