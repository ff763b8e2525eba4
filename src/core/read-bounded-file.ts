// Reads a small input file from disk, bounded: a regular file of at most a size (in UTF-8, for text), or the reason it
// is not one. Never blocks on a pipe or reads a device.
import { isUtf8 } from "node:buffer";
import { closeSync, constants, fstatSync, openSync, readSync, statSync, type Stats } from "node:fs";

/** A text file read, or why not; `at` when the problem has a place in the file (a byte that is not UTF-8), 1-based. */
export type BoundedTextRead =
  | { readonly ok: true; readonly text: string }
  | { readonly ok: false; readonly problem: string; readonly at?: { readonly line: number; readonly column: number } };

/** What is read: the bound, and how messages name the kind of file (`a workflow file`). */
export interface FileKind {
  readonly maxBytes: number;
  readonly what: string;
}

/** 1048576 → 1 MiB; 16777216 → 16 MiB. */
function formatBound(bytes: number): string {
  return `${bytes / (1024 * 1024)} MiB`;
}

function describeKind(stats: Stats): string {
  if (stats.isDirectory()) return "a directory";
  if (stats.isCharacterDevice()) return "a character device";
  if (stats.isBlockDevice()) return "a block device";
  if (stats.isFIFO()) return "a named pipe (FIFO)";
  if (stats.isSocket()) return "a socket";
  return "not a file";
}

/** A filesystem error in a few words: "no such file or directory", "permission denied", else its code. */
export function describeFsError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return "no such file or directory";
  if (code === "EACCES") return "permission denied";
  return code ?? String(error);
}

/** What is wrong with a file of these stats, or undefined when it is a regular file within the bound. */
function checkStats(stats: Stats, kind: FileKind): string | undefined {
  if (!stats.isFile())
    return `not a regular file but ${describeKind(stats)}; ${kind.what} is a regular file of at most ${formatBound(kind.maxBytes)}`;
  if (stats.size > kind.maxBytes)
    return `${stats.size} bytes, more than the ${formatBound(kind.maxBytes)} (${kind.maxBytes} bytes) ${kind.what} may have`;
  return undefined;
}

/** The offset of the first byte that does not start a well-formed UTF-8 sequence, or -1 when all do. */
export function findInvalidUtf8(bytes: Buffer): number {
  for (let i = 0; i < bytes.length;) {
    const byte = bytes[i]!;
    if (byte < 0x80) {
      i += 1;
      continue;
    }
    const length =
      byte >= 0xc2 && byte <= 0xdf ? 2 : byte >= 0xe0 && byte <= 0xef ? 3 : byte >= 0xf0 && byte <= 0xf4 ? 4 : 0;
    // isUtf8 on the one sequence also refuses overlong forms and surrogates.
    if (length === 0 || i + length > bytes.length || !isUtf8(bytes.subarray(i, i + length))) return i;
    i += length;
  }
  return -1;
}

/** The 1-based line and column (in characters) of a byte offset of text that is UTF-8 before it. */
function positionOfByte(bytes: Buffer, offset: number): { line: number; column: number } {
  const lineStart = bytes.lastIndexOf(0x0a, offset - 1) + 1;
  let line = 1;
  for (let i = bytes.indexOf(0x0a); i >= 0 && i < offset; i = bytes.indexOf(0x0a, i + 1)) line += 1;
  return { line, column: bytes.subarray(lineStart, offset).toString("utf8").length + 1 };
}

/**
 * The text of a regular UTF-8 file of at most `kind.maxBytes`. The path is checked before it is opened (non-blocking)
 * and the open file again, and at most one byte past the bound is read. A file that is not UTF-8 is refused at its
 * first bad byte, where decoding would turn a name into one nobody wrote.
 */
export function readBoundedTextFile(path: string, kind: FileKind): BoundedTextRead {
  const read = readBoundedFile(path, kind);
  if (!read.ok) return read;
  const { bytes } = read;
  const bad = findInvalidUtf8(bytes);
  if (bad >= 0)
    return {
      ok: false,
      problem: `expected UTF-8 text, found the byte 0x${bytes[bad]!.toString(16).padStart(2, "0")} that is not UTF-8 here`,
      at: positionOfByte(bytes, bad),
    };
  return { ok: true, text: bytes.toString("utf8") };
}

/** The bytes of a regular file of at most `kind.maxBytes`, read without blocking on a pipe (the steps file's reader decodes them itself). */
export function readBoundedFile(
  path: string,
  kind: FileKind,
): { readonly ok: true; readonly bytes: Buffer } | { readonly ok: false; readonly problem: string } {
  let fd: number;
  try {
    const problem = checkStats(statSync(path), kind);
    if (problem !== undefined) return { ok: false, problem };
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    return { ok: false, problem: `cannot read the file: ${describeFsError(error)}` };
  }
  let bytes: Buffer;
  try {
    const problem = checkStats(fstatSync(fd), kind); // the path may have been replaced between the two looks
    if (problem !== undefined) return { ok: false, problem };
    const buffer = Buffer.alloc(kind.maxBytes + 1);
    let size = 0;
    for (let read = -1; read !== 0 && size < buffer.length; size += read)
      read = readSync(fd, buffer, size, buffer.length - size, null);
    if (size > kind.maxBytes)
      return {
        ok: false,
        problem: `more than the ${formatBound(kind.maxBytes)} (${kind.maxBytes} bytes) ${kind.what} may have`,
      };
    bytes = buffer.subarray(0, size);
  } catch (error) {
    return { ok: false, problem: `cannot read the file: ${describeFsError(error)}` };
  } finally {
    closeSync(fd);
  }
  return { ok: true, bytes };
}
