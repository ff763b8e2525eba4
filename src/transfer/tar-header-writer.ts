// Encodes tar entry headers: one 512-byte ustar block, preceded by a PAX extended header when a field does not fit.
import { Buffer } from "node:buffer";

/** The entry kinds packTrees writes. */
export type TarEntryType = "file" | "directory" | "symlink";

/** One archive member as the encoder sees it; owner is always 0:0 without user or group names. */
export interface TarHeader {
  /** Archive path, UTF-8; a directory's ends with "/". */
  readonly path: string;
  readonly type: TarEntryType;
  /** Permission bits; anything above 0o7777 is dropped. */
  readonly mode: number;
  /** Content bytes that follow the header (0 for directories and symlinks). */
  readonly size: number;
  /** Modification time in whole seconds since the epoch. */
  readonly mtimeSeconds: number;
  /** Symlink target, stored as is. */
  readonly linkTarget?: string;
}

/** How a header will be encoded: decided once by planTarHeader, written by writeTarHeader. */
export interface TarHeaderPlan {
  readonly header: TarHeader;
  /** Bytes writeTarHeader writes: 512, or more with a PAX extended header in front. */
  readonly byteLength: number;
  /** The path's UTF-8 bytes when it is longer than the name field, else undefined (written as a string). */
  readonly pathBytes: Buffer | undefined;
  /** Where the path is split into prefix and name (the index of that "/"), or -1 for no prefix. */
  readonly splitAt: number;
  /** The PAX extended header's records, or undefined when the ustar block holds everything. */
  readonly pax: Buffer | undefined;
}

export const TAR_BLOCK_BYTES = 512;
/** The end of an archive: two zero blocks. */
export const END_OF_ARCHIVE_BYTES = 2 * TAR_BLOCK_BYTES;

const NAME_BYTES = 100;
const PREFIX_BYTES = 155;
const LINK_BYTES = 100;
/** The largest value 11 octal digits hold: 8 GiB - 1 for sizes, year 2242 for mtimes. */
const MAX_OCTAL_11 = 8 ** 11 - 1;
const SLASH = 0x2f;
const TYPEFLAGS: Readonly<Record<TarEntryType | "pax", number>> = {
  file: 0x30,
  directory: 0x35,
  symlink: 0x32,
  pax: 0x78,
};
/** "ustar\0" then version "00". */
const MAGIC_AND_VERSION = Buffer.from("ustar\u000000", "latin1");
const PAX_HEADER_NAME = "PaxHeader";
/**
 * The parts of every ustar block that never change, and their byte sum with the checksum field as
 * eight spaces: owner 0:0 without names, device numbers 0, magic "ustar\0" and version "00".
 */
const TEMPLATE = buildTemplate();
const TEMPLATE_SUM = TEMPLATE.reduce((sum, byte) => sum + byte, 0) + 8 * 0x20;

/** Rounds a content size up to whole 512-byte blocks. */
export function paddedSize(size: number): number {
  return Math.ceil(size / TAR_BLOCK_BYTES) * TAR_BLOCK_BYTES;
}

/**
 * Decides how `header` is encoded. The path goes into the 100-byte name field when it fits, else it
 * is split at a "/" into prefix (at most 155 bytes) and name (at most 100, not empty), taking the
 * rightmost such "/" like GNU tar; when no split fits, a PAX `path` record carries it. A symlink
 * target over 100 bytes gets a `linkpath` record, a size of 8 GiB or more a `size` record, an mtime
 * before 1970 or after 2242 an `mtime` record.
 */
export function planTarHeader(header: TarHeader): TarHeaderPlan {
  const pathLength = Buffer.byteLength(header.path);
  let pathBytes: Buffer | undefined;
  let splitAt = -1;
  let pathFits = pathLength <= NAME_BYTES;
  if (!pathFits) {
    pathBytes = Buffer.from(header.path);
    splitAt = findSplit(pathBytes);
    pathFits = splitAt > 0;
  }
  const linkFits = header.linkTarget === undefined || Buffer.byteLength(header.linkTarget) <= LINK_BYTES;
  const sizeFits = header.size <= MAX_OCTAL_11;
  const mtime = Math.floor(header.mtimeSeconds);
  const mtimeFits = mtime >= 0 && mtime <= MAX_OCTAL_11;
  if (pathFits && linkFits && sizeFits && mtimeFits)
    return { header, byteLength: TAR_BLOCK_BYTES, pathBytes, splitAt, pax: undefined };

  const records = [
    pathFits ? "" : encodePaxRecord("path", header.path),
    linkFits ? "" : encodePaxRecord("linkpath", header.linkTarget ?? ""),
    sizeFits ? "" : encodePaxRecord("size", String(header.size)),
    mtimeFits ? "" : encodePaxRecord("mtime", String(mtime)),
  ].join("");
  const pax = Buffer.from(records);
  const byteLength = TAR_BLOCK_BYTES + paddedSize(pax.length) + TAR_BLOCK_BYTES;
  return { header, byteLength, pathBytes, splitAt: pathFits ? splitAt : -1, pax };
}

/**
 * Writes the planned header at `offset` of `target` (which must have plan.byteLength bytes there)
 * and returns plan.byteLength. Every byte of that range is written, padding included.
 */
export function writeTarHeader(plan: TarHeaderPlan, target: Buffer, offset: number): number {
  const { header, pax } = plan;
  const mtime = clampMtime(header.mtimeSeconds);
  let at = offset;
  if (pax !== undefined) {
    const paxFields = {
      path: PAX_HEADER_NAME,
      pathBytes: undefined,
      splitAt: -1,
      linkTarget: undefined,
      mode: 0o644,
      size: pax.length,
      mtime,
      typeflag: TYPEFLAGS.pax,
    };
    writeBlock(target, at, paxFields);
    at += TAR_BLOCK_BYTES;
    pax.copy(target, at);
    const body = paddedSize(pax.length);
    target.fill(0, at + pax.length, at + body);
    at += body;
  }
  const fields = {
    path: header.path,
    pathBytes: plan.pathBytes,
    splitAt: plan.splitAt,
    linkTarget: header.linkTarget,
    mode: header.mode & 0o7777,
    size: header.size,
    mtime,
    typeflag: TYPEFLAGS[header.type],
  };
  writeBlock(target, at, fields);
  return at + TAR_BLOCK_BYTES - offset;
}

/** Encodes a header into a fresh buffer (planTarHeader then writeTarHeader). */
export function encodeTarHeader(header: TarHeader): Buffer {
  const plan = planTarHeader(header);
  const target = Buffer.allocUnsafe(plan.byteLength);
  writeTarHeader(plan, target, 0);
  return target;
}

/**
 * One PAX record, `<length> <key>=<value>\n`, where length counts the whole record in bytes, its own
 * digits included (so a record of 98 bytes before its length is "101 ...": two digits would make 100).
 */
export function encodePaxRecord(key: string, value: string): string {
  const rest = ` ${key}=${value}\n`;
  const restBytes = Buffer.byteLength(rest);
  let digits = String(restBytes).length;
  if (String(restBytes + digits).length > digits) digits += 1;
  return `${restBytes + digits}${rest}`;
}

/** The index of the "/" to split a path at (prefix before it, name after it), or -1 when none fits. */
function findSplit(path: Buffer): number {
  if (path.length > PREFIX_BYTES + 1 + NAME_BYTES) return -1;
  // The name after the split must not be empty: a directory's trailing "/" is no split point.
  const splitAt = path.lastIndexOf(SLASH, Math.min(PREFIX_BYTES, path.length - 2));
  if (splitAt <= 0 || path.length - splitAt - 1 > NAME_BYTES) return -1;
  return splitAt;
}

function buildTemplate(): Buffer {
  const block = Buffer.alloc(TAR_BLOCK_BYTES);
  for (const at of [108, 116, 329, 337]) writeOctal(block, at, 8, 0);
  MAGIC_AND_VERSION.copy(block, 257);
  return block;
}

/** Writes one ustar block: template, path, link target, numbers, then the checksum. */
function writeBlock(target: Buffer, block: number, fields: BlockFields): void {
  target.set(TEMPLATE, block);
  let sum = TEMPLATE_SUM + fields.typeflag;
  sum += writePath(fields, target, block);
  if (fields.linkTarget !== undefined) sum += writeTruncated(fields.linkTarget, target, block + 157, LINK_BYTES);
  sum += writeOctal(target, block + 100, 8, fields.mode);
  sum +=
    fields.size <= MAX_OCTAL_11
      ? writeOctal(target, block + 124, 12, fields.size)
      : writeBase256(target, block + 124, 12, fields.size);
  sum += writeOctal(target, block + 136, 12, fields.mtime);
  target[block + 156] = fields.typeflag;
  // The checksum field is written GNU-style: six octal digits, NUL, space.
  writeOctal(target, block + 148, 7, sum);
  target[block + 155] = 0x20;
}

interface BlockFields {
  /** The path as a string when it fits the name field, else its bytes. */
  readonly path: string;
  readonly pathBytes: Buffer | undefined;
  readonly splitAt: number;
  readonly linkTarget: string | undefined;
  readonly mode: number;
  readonly size: number;
  readonly mtime: number;
  readonly typeflag: number;
}

/**
 * Writes the name (and prefix) fields and returns the sum of the bytes written; a path carried by
 * PAX leaves its first 100 bytes in the name field.
 */
function writePath(fields: BlockFields, target: Buffer, block: number): number {
  const { pathBytes, splitAt } = fields;
  if (pathBytes === undefined) return writeShortText(fields.path, target, block);
  if (splitAt > 0) {
    const nameLength = pathBytes.copy(target, block, splitAt + 1);
    pathBytes.copy(target, block + 345, 0, splitAt);
    return sumBytes(target, block, nameLength) + sumBytes(target, block + 345, splitAt);
  }
  return sumBytes(target, block, pathBytes.copy(target, block, 0, NAME_BYTES));
}

function writeTruncated(text: string, target: Buffer, at: number, width: number): number {
  if (Buffer.byteLength(text) <= width) return writeShortText(text, target, at);
  return sumBytes(target, at, Buffer.from(text).copy(target, at, 0, width));
}

/** Writes text known to fit its field as UTF-8 and returns the sum of its bytes; ASCII is copied in JS, without a native call. */
function writeShortText(text: string, target: Buffer, at: number): number {
  let sum = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code >= 0x80) return sumBytes(target, at, target.write(text, at, "utf8"));
    target[at + index] = code;
    sum += code;
  }
  return sum;
}

function sumBytes(source: Buffer, at: number, length: number): number {
  let sum = 0;
  for (let index = at; index < at + length; index += 1) sum += source[index] ?? 0;
  return sum;
}

/** Writes `value` as width-1 zero-padded octal digits and a NUL; returns the sum of the bytes written. */
function writeOctal(target: Buffer, at: number, width: number, value: number): number {
  let rest = value;
  let sum = 0;
  let index = at + width - 2;
  // Above 2^31 take digits off with float arithmetic, then with integer shifts.
  for (; rest > 0x7fffffff; index -= 1) {
    const digit = rest % 8;
    target[index] = 0x30 + digit;
    sum += 0x30 + digit;
    rest = (rest - digit) / 8;
  }
  for (; index >= at; index -= 1) {
    const digit = rest & 7;
    target[index] = 0x30 + digit;
    sum += 0x30 + digit;
    rest >>>= 3;
  }
  target[at + width - 1] = 0;
  return sum;
}

/** GNU's base-256 form for numbers too large for octal: 0x80, then the value big-endian; returns the byte sum. */
function writeBase256(target: Buffer, at: number, width: number, value: number): number {
  let rest = value;
  let sum = 0x80;
  for (let index = at + width - 1; index > at; index -= 1) {
    const byte = rest % 256;
    target[index] = byte;
    sum += byte;
    rest = (rest - byte) / 256;
  }
  target[at] = 0x80;
  return sum;
}

function clampMtime(mtimeSeconds: number): number {
  return Math.min(Math.max(Math.floor(mtimeSeconds), 0), MAX_OCTAL_11);
}
