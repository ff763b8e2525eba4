// Decodes the meta headers that precede a tar member: PAX extended records ('x') and GNU long names ('L', 'K').
import { TarFormatError } from "./tar-header.js";

/** What a PAX extended header ('x') changes in the member that follows it; absent fields change nothing. */
export interface PaxOverrides {
  readonly path?: string;
  readonly linkpath?: string;
  readonly size?: number;
  readonly mtime?: number;
  /** Any GNU.sparse.* key: the member is a GNU sparse file stored in the PAX way. */
  readonly sparse: boolean;
}

const NEWLINE = 0x0a;
const SPACE = 0x20;
const EQUALS = 0x3d;

/**
 * Parses PAX records ("LENGTH KEY=VALUE\n", LENGTH counting the whole record) into a map, the last of a
 * repeated key winning. NUL padding after the last record is allowed. Throws TarFormatError on a record
 * that is malformed or runs past the body.
 */
export function parsePaxRecords(body: Buffer): Map<string, string> {
  const records = new Map<string, string>();
  let start = 0;
  while (start < body.length) {
    if (body[start] === 0) {
      if (body.subarray(start).some((byte) => byte !== 0)) throw malformed(start);
      break;
    }
    let index = start;
    let length = 0;
    while (index < body.length && (body[index] ?? 0) >= 0x30 && (body[index] ?? 0) <= 0x39) {
      length = length * 10 + ((body[index] ?? 0) - 0x30);
      if (length > body.length) throw malformed(start);
      index += 1;
    }
    const end = start + length;
    if (index === start || body[index] !== SPACE || end > body.length || body[end - 1] !== NEWLINE)
      throw malformed(start);
    const equals = body.indexOf(EQUALS, index + 1);
    if (equals <= index + 1 || equals >= end) throw malformed(start);
    records.set(body.toString("utf8", index + 1, equals), body.toString("utf8", equals + 1, end - 1));
    start = end;
  }
  return records;
}

/**
 * The overrides a member's PAX records make: path, linkpath, size, mtime (GNU.sparse.name stands for the
 * path of a sparse member). Other keys (uid, gid, uname, atime, charset, vendor keys) are ignored, as is
 * an empty value (POSIX: the header field applies). Throws TarFormatError on a malformed size or mtime.
 */
export function readPaxOverrides(records: ReadonlyMap<string, string>): PaxOverrides {
  let sparse = false;
  for (const key of records.keys()) if (key.startsWith("GNU.sparse.")) sparse = true;
  const path = nonEmpty(records.get("GNU.sparse.name")) ?? nonEmpty(records.get("path"));
  const linkpath = nonEmpty(records.get("linkpath"));
  const sizeText = nonEmpty(records.get("size"));
  const mtimeText = nonEmpty(records.get("mtime"));
  let size: number | undefined;
  if (sizeText !== undefined) {
    size = Number(sizeText);
    if (!/^[0-9]+$/.test(sizeText) || !Number.isSafeInteger(size))
      throw new TarFormatError(`Invalid PAX header: size ${JSON.stringify(sizeText)}`);
  }
  let mtime: number | undefined;
  if (mtimeText !== undefined) {
    mtime = Number(mtimeText);
    if (!/^-?[0-9]+(\.[0-9]*)?$/.test(mtimeText) || !Number.isFinite(mtime))
      throw new TarFormatError(`Invalid PAX header: mtime ${JSON.stringify(mtimeText)}`);
  }
  return {
    sparse,
    ...(path === undefined ? {} : { path }),
    ...(linkpath === undefined ? {} : { linkpath }),
    ...(size === undefined ? {} : { size }),
    ...(mtime === undefined ? {} : { mtime }),
  };
}

/** A GNU long name or long link name ('L' or 'K' body): the bytes up to the first NUL, as UTF-8. */
export function decodeLongName(body: Buffer): string {
  const end = body.indexOf(0);
  return body.toString("utf8", 0, end === -1 ? body.length : end);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === "" ? undefined : value;
}

function malformed(offset: number): TarFormatError {
  return new TarFormatError(`Invalid PAX header: malformed record at byte ${offset} of its body`);
}
