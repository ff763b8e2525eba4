// The format of one stored entry file: the archive's bytes as the pod sent them, then a metadata trailer.
//
//   <archive: `bytes` bytes> <metadata JSON, UTF-8> <JSON length: u32 big-endian> <magic "KNCACHE1">
//
// One file per entry, so that saving is a single link(2) of a complete file (atomic, and EEXIST when the key is
// taken) and removing is a single unlink; no sidecar can be out of step with its archive. The JSON holds repo, key,
// bytes, sha256 (of the archive bytes), compression and createdAt; lastUsedAt is the file's mtime, set on save and on
// every successful read. A file too short for its trailer, with a bad magic, length or JSON, or whose size is not
// `bytes` plus the trailer, is damaged: a truncated entry loses its trailer; a changed byte in the archive fails the
// sha256 checked while it is read (entry-reader.ts).
import type { FileHandle } from "node:fs/promises";
import type { CacheEntry } from "../workflow/cache-types.js";

export const TRAILER_MAGIC = Buffer.from("KNCACHE1", "latin1");
/** Length field plus magic. */
export const TRAILER_TAIL_BYTES = 4 + TRAILER_MAGIC.length;
/** Longest metadata JSON accepted (two names of 512 characters escaped take well under this). */
export const MAX_METADATA_BYTES = 64 * 1024;

/** What the trailer records: the entry as the store lists it, but lastUsedAt, which is the file's mtime. */
export type EntryMetadata = Omit<CacheEntry, "lastUsedAt">;

/** An entry file that is not what a save writes: truncated, changed, or not ours. */
export class DamagedEntryError extends Error {
  override readonly name = "DamagedEntryError";
}

/** The trailer to append after the archive's bytes. */
export function encodeTrailer(metadata: EntryMetadata): Buffer {
  const json = Buffer.from(JSON.stringify({ v: 1, ...metadata }), "utf8");
  const tail = Buffer.alloc(TRAILER_TAIL_BYTES);
  tail.writeUInt32BE(json.length, 0);
  TRAILER_MAGIC.copy(tail, 4);
  return Buffer.concat([json, tail]);
}

/** Reads and checks the trailer of an open entry file of `size` bytes; throws DamagedEntryError. */
export async function readTrailer(handle: FileHandle, size: number): Promise<EntryMetadata> {
  if (size < TRAILER_TAIL_BYTES)
    throw new DamagedEntryError(`the file is ${size} bytes, too short for its trailer (truncated)`);
  const tail = Buffer.alloc(TRAILER_TAIL_BYTES);
  await readExactly(handle, tail, size - TRAILER_TAIL_BYTES);
  if (!tail.subarray(4).equals(TRAILER_MAGIC))
    throw new DamagedEntryError("its trailer is missing (truncated or overwritten)");
  const jsonBytes = tail.readUInt32BE(0);
  if (jsonBytes > MAX_METADATA_BYTES || jsonBytes > size - TRAILER_TAIL_BYTES)
    throw new DamagedEntryError(`its trailer claims ${jsonBytes} bytes of metadata`);
  const json = Buffer.alloc(jsonBytes);
  await readExactly(handle, json, size - TRAILER_TAIL_BYTES - jsonBytes);
  const metadata = parseMetadata(json);
  const expected = metadata.bytes + jsonBytes + TRAILER_TAIL_BYTES;
  if (expected !== size) throw new DamagedEntryError(`the file is ${size} bytes but its trailer says ${expected}`);
  return metadata;
}

function parseMetadata(json: Buffer): EntryMetadata {
  let value: unknown;
  try {
    value = JSON.parse(json.toString("utf8"));
  } catch {
    throw new DamagedEntryError("its metadata is not JSON");
  }
  const record = (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>;
  const { v, repo, key, bytes, sha256, compression, createdAt } = record;
  if (
    v !== 1 ||
    typeof repo !== "string" ||
    typeof key !== "string" ||
    typeof bytes !== "number" ||
    !Number.isSafeInteger(bytes) ||
    bytes < 0 ||
    typeof sha256 !== "string" ||
    !/^[0-9a-f]{64}$/.test(sha256) ||
    (compression !== "gzip" && compression !== "zstd" && compression !== "none") ||
    typeof createdAt !== "number" ||
    !Number.isFinite(createdAt)
  ) {
    throw new DamagedEntryError("its metadata lacks a field or has one of the wrong type");
  }
  return { repo, key, bytes, sha256, compression, createdAt };
}

async function readExactly(handle: FileHandle, into: Buffer, position: number): Promise<void> {
  let filled = 0;
  while (filled < into.length) {
    const { bytesRead } = await handle.read(into, filled, into.length - filled, position + filled);
    if (bytesRead === 0) throw new DamagedEntryError("the file ended early while its trailer was read (truncated)");
    filled += bytesRead;
  }
}
