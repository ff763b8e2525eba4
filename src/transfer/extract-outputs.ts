// Extracts the outputs archive coming back from the pod (hostile input) into a host directory.
//
// Why our own tar parser (tar-parser.ts) and writer rather than node-tar's Unpack or tar-stream: node-tar
// validates paths but writes any symlink target as is (a `m -> x/..` plus `x -> .` pair escapes), reports
// its own refusals only as warnings without telling which entries were really written, and has no way to
// stop reading mid-archive and settle at once when a limit is hit; tar-stream costs a stream, a promise
// and several event-loop turns per entry, which made extraction CPU-bound at 50,000 small files. The push
// parser hands us every header before a byte is written and each body as slices of the input chunks; we
// write through O_NOFOLLOW/O_EXCL file descriptors after checking every parent with lstat (once per
// directory: see OutputTree in output-writer.ts for why remembering them is safe), and stop consuming at will.
import { mkdir, realpath } from "node:fs/promises";
import type { Readable } from "node:stream";
import { classifyEntry } from "./entry-policy.js";
import {
  SMALL_FILE_BYTES,
  appendToOutputFile,
  closeOutputFile,
  createOutputTree,
  discardOutputFile,
  makeOutputDirectory,
  makeOutputSymlink,
  openOutputFile,
  writeSmallOutputFile,
} from "./output-writer.js";
import type { OutputFile, OutputTree } from "./output-writer.js";
import { TarFormatError } from "./tar-header.js";
import { TarParser } from "./tar-parser.js";
import type { TarMember } from "./tar-parser.js";
import type { ReadonlyList } from "../core/readonly-list.js";
import { FilesByPath } from "./files-by-path.js";
import { countNewlines } from "./path-facts.js";
import { WrittenFileList } from "./written-files.js";

/** Budgets for one extraction; see extractOutputs for what counts. */
export interface ExtractLimits {
  readonly maxBytes: number;
  readonly maxEntries: number;
}

export interface ExtractOptions {
  /**
   * Told of each chunk `archive` emitted once nothing refers to it any more, so that its memory can be read
   * into again (see PooledStdout). Chunks still unread when the extraction ends are not released.
   */
  readonly releaseChunk?: (chunk: Buffer) => void;
  /** The stream may be several archives one after the other (see TarParser's `concatenated`). */
  readonly concatenated?: boolean;
}

/** An entry that was not written; `path` is the name exactly as it appeared in the archive. */
export interface RefusedEntry {
  readonly path: string;
  readonly reason: string;
}

/** A written regular file; `path` is relative to destDir, posix, without a leading "./". */
export interface ExtractedFile {
  readonly path: string;
  readonly size: number;
  readonly sha256: string;
}

/** Outcome of an extraction; `bytes` is the content size of written files. */
export interface ExtractReport {
  /** One per path written, the last written of each (the file on disk), sorted by path as JS compares strings. */
  readonly files: ReadonlyList<ExtractedFile>;
  readonly refused: readonly RefusedEntry[];
  readonly bytes: number;
  readonly limitReached: boolean;
  /**
   * Archive members seen: every header but the meta ones (PAX 'x' and 'g', GNU 'L' and 'K'), so files,
   * directories, symlinks, the "./" root and refused entries, the one that hit a limit included. For an
   * archive of `tar -cf - -C DIR .`, entries + nameNewlines is the line count of `find DIR ! -type s`
   * (tar leaves sockets out; find prints one line per path, so a name with newlines takes more).
   */
  readonly entries: number;
  /** Newline characters in those members' names (not in link targets). */
  readonly nameNewlines: number;
}

/** The archive could not be read to its end (truncated, corrupt, source failed) or writing failed on the host. */
export class OutputArchiveError extends Error {
  /** What had been written (and stays on disk) before the failure. */
  readonly partial: ExtractReport;

  constructor(message: string, partial: ExtractReport, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "OutputArchiveError";
    this.partial = partial;
  }
}

interface ExtractionState {
  readonly tree: OutputTree;
  readonly limits: ExtractLimits;
  /** Every file written, in archive order, duplicates included (the report keeps the last of each path). */
  readonly files: WrittenFileList;
  readonly refused: RefusedEntry[];
  entries: number;
  nameNewlines: number;
  bytesWritten: number;
  bytesRead: number;
  limitReached: boolean;
}

/** Why an extraction failed: the OutputArchiveError's message and cause. */
interface Failure {
  readonly message: string;
  readonly cause?: unknown;
}

/** What is being done with the body of the member being read. */
type BodyTask =
  | { readonly kind: "skip" }
  | { readonly kind: "small"; readonly member: TarMember; readonly parts: readonly string[] }
  | { readonly kind: "large"; readonly member: TarMember; readonly file: OutputFile };

/** Longest stretch of entries handled before yielding to the event loop (the daemon embeds this library). */
const SLICE_MS = 5;
/** Input buffered ahead of the parser before the source is paused. */
const HIGH_WATER_BYTES = 4 * 1024 * 1024;
/** A large file's body is written once this much of it (or all that is left) is buffered. */
const LARGE_BODY_PIECE_BYTES = 64 * 1024;

/**
 * Extracts `archive` (as made by `tar -cf - -C /outputs .`) into `destDir`, creating it if missing.
 * Only regular files, directories and relative symlinks that stay inside destDir are written; absolute
 * or ".." paths, hard links, devices, fifos, unsafe symlinks, writes through a symlink and paths taken by
 * something of another kind are refused and listed in `refused`. Files get mode `(mode & 0o755) | 0o600`,
 * directories `(mode & 0o755) | 0o700`, and their mtime; sha256 and size are computed while streaming.
 * Entries are handled in slices of at most SLICE_MS of synchronous work (every write is a sync call, see
 * output-writer.ts), then the event loop gets a turn; the source is paused while more than HIGH_WATER_BYTES
 * wait to be parsed. With `options.releaseChunk`, each input chunk is given back once no longer needed.
 * destDir is expected to be empty or to hold only trusted content (its existing symlinks are not vetted,
 * though nothing is ever written through one).
 *
 * Limits: every entry counts toward maxEntries (directories, refused entries and "./" included). Content
 * bytes read count toward maxBytes, written or discarded (so refused bodies cannot make us read forever);
 * `bytes` reports the written ones. The entry that would exceed a limit is refused ("over the ... limit")
 * and extraction stops right there: limitReached is true, the promise resolves without reading further,
 * and `archive` is left paused and not destroyed (the caller kills the source).
 *
 * The archive ends at its first zero block, as for GNU tar; what follows it must be zeros (record padding);
 * with `options.concatenated`, archives may follow one another, and the stream must end on zero blocks.
 * Links, devices, fifos and directories have no body whatever their size field says. GNU sparse files
 * (old 'S' or PAX GNU.sparse.*) are refused and their stored bytes skipped.
 *
 * Rejects with OutputArchiveError when the archive is truncated (mid-entry, or without an end-of-archive
 * block after the last entry), corrupt (bad header checksum or number, malformed PAX record, data after
 * the end-of-archive block), or its source errors, and when the host file system fails. Its
 * `partial` report lists the files completely written before; they stay on disk, a half-written file is
 * removed. Throws a TypeError (as a rejection) for negative or non-integer limits.
 */
export async function extractOutputs(
  archive: Readable,
  destDir: string,
  limits: ExtractLimits,
  options: ExtractOptions = {},
): Promise<ExtractReport> {
  assertValidLimits(limits);
  await mkdir(destDir, { recursive: true });
  const state: ExtractionState = {
    tree: createOutputTree(await realpath(destDir)),
    limits,
    files: new WrittenFileList(),
    refused: [],
    entries: 0,
    nameNewlines: 0,
    bytesWritten: 0,
    bytesRead: 0,
    limitReached: false,
  };
  return runExtraction(archive, state, options);
}

function assertValidLimits(limits: ExtractLimits): void {
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 0)
      throw new TypeError(`${name} must be a non-negative integer, got ${String(value)}`);
  }
}

function runExtraction(archive: Readable, state: ExtractionState, options: ExtractOptions): Promise<ExtractReport> {
  return new Promise((resolve, reject) => {
    const parser = new TarParser({ release: options.releaseChunk, concatenated: options.concatenated ?? false });
    /** Where a small body that spans input chunks is gathered (written before the next one is taken). */
    const scratch = Buffer.allocUnsafe(SMALL_FILE_BYTES);
    let task: BodyTask | undefined;
    let settled = false;
    /** A slice yield is pending: input is only queued meanwhile. */
    let waiting = false;
    let sourceEnded = false;
    /**
     * Synchronous work done since the event loop last had a turn we gave it. Data events can come back to
     * back within one I/O callback, so the work of several pump calls adds up until we yield.
     */
    let sliceUsedMs = 0;
    let pumpStartedAt = 0;
    const sliceIsOver = (): boolean => sliceUsedMs + (performance.now() - pumpStartedAt) >= SLICE_MS;

    const onData = (chunk: Buffer | Uint8Array): void => {
      parser.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      if (parser.buffered >= HIGH_WATER_BYTES) archive.pause();
      pump();
    };
    const onEnd = (): void => {
      sourceEnded = true;
      pump();
    };
    const onSourceClose = (): void => {
      if (!sourceEnded) settle({ message: "output archive is truncated: its source closed before the end" });
    };
    const onSourceError = (error: Error): void => {
      settle({ message: `reading the output archive failed: ${error.message}`, cause: error });
    };
    /** Ends the extraction: successfully (a complete archive or a limit) when `failure` is undefined. */
    const settle = (failure?: Failure): void => {
      if (settled) return;
      settled = true;
      archive.off("data", onData);
      archive.off("end", onEnd);
      archive.off("close", onSourceClose);
      archive.pause();
      // Only a failure can leave a large file half-written (a limit stops between entries).
      if (task?.kind === "large") discardOutputFile(task.file);
      task = undefined;
      // Nothing is written any more: the report (partial or not) is final.
      buildReportInSlices(state).then((report) => {
        if (failure === undefined) resolve(report);
        else
          reject(
            new OutputArchiveError(
              failure.message,
              report,
              failure.cause === undefined ? undefined : { cause: failure.cause },
            ),
          );
      }, reject);
    };
    /** Called when the parser needs more input to go on. */
    const awaitInput = (): void => {
      if (!sourceEnded) {
        if (archive.isPaused()) archive.resume();
        return;
      }
      const cut = parser.finish();
      if (cut === undefined) settle();
      else if (cut.inside)
        settle({ message: `output archive is truncated or corrupt after ${state.entries} entries: ${cut.detail}` });
      else settle({ message: `output archive is truncated: ${cut.detail}` });
    };
    const yieldSlice = (): void => {
      waiting = true;
      setImmediate(() => {
        waiting = false;
        sliceUsedMs = 0;
        pump();
      });
    };
    /** Goes on with the current body; false when it has to wait (for input, a write or the next slice). */
    const continueBody = (current: BodyTask): boolean => {
      switch (current.kind) {
        case "skip":
          if (parser.skipBody()) return true;
          awaitInput();
          return false;
        case "small": {
          const body = parser.takeBody(scratch);
          if (body === undefined) {
            awaitInput();
            return false;
          }
          const { member, parts } = current;
          const result = refuseNameTooLong(
            () => writeSmallOutputFile(state.tree, parts, member.mode, member.mtime, body),
            { reason: NAME_TOO_LONG },
          );
          if ("reason" in result) state.refused.push({ path: member.name, reason: result.reason });
          else recordWritten(state, result.written);
          return true;
        }
        case "large": {
          const { member, file } = current;
          // Take pieces of a useful size: a source that trickles bytes must not queue millions of tiny writes.
          if (parser.buffered < Math.min(parser.bodyRemaining, LARGE_BODY_PIECE_BYTES) && !sourceEnded) {
            awaitInput();
            return false;
          }
          for (let piece = parser.readBody(); piece !== undefined; piece = parser.readBody()) {
            appendToOutputFile(file, piece);
            if (sliceIsOver()) {
              yieldSlice();
              return false;
            }
          }
          if (parser.bodyRemaining > 0) {
            awaitInput();
            return false;
          }
          recordWritten(state, closeOutputFile(file, member.mode, member.mtime));
          return true;
        }
      }
    };
    const pump = (): void => {
      if (settled || waiting) return;
      pumpStartedAt = performance.now();
      try {
        for (;;) {
          if (task !== undefined) {
            if (!continueBody(task)) return;
            task = undefined;
          }
          if (sliceIsOver()) {
            yieldSlice();
            return;
          }
          const member = parser.nextMember();
          if (member === undefined || member === "end") {
            awaitInput();
            return;
          }
          const started = startEntry(state, member);
          if (started === "stop") {
            settle();
            return;
          }
          task = started;
        }
      } catch (error) {
        settle(toFailure(error, state));
      } finally {
        sliceUsedMs += performance.now() - pumpStartedAt;
      }
    };

    archive.on("error", onSourceError);
    archive.on("data", onData);
    archive.on("end", onEnd);
    archive.on("close", onSourceClose);
    archive.resume();
  });
}

/** Counts the member, applies the limits and the policy; returns what to do with its body, or "stop". */
function startEntry(state: ExtractionState, member: TarMember): BodyTask | undefined | "stop" {
  state.entries += 1;
  state.nameNewlines += countNewlines(member.name);
  const { maxEntries, maxBytes } = state.limits;
  if (state.entries > maxEntries)
    return stopAt(state, member.name, `over the entry limit: the archive has more than ${maxEntries} entries`);

  const verdict = classifyEntry(member);
  const bodySize = member.size;
  if (state.bytesRead + bodySize > maxBytes) {
    const overLimit = `over the size limit: ${bodySize} more bytes would exceed ${maxBytes} (${state.bytesRead} already read)`;
    return stopAt(state, member.name, verdict.kind === "refuse" ? `${verdict.reason}; ${overLimit}` : overLimit);
  }
  state.bytesRead += bodySize;

  let reason: string | undefined;
  switch (verdict.kind) {
    case "root":
      break;
    case "refuse":
      reason = verdict.reason;
      break;
    case "directory":
      reason = refuseNameTooLong(() => makeOutputDirectory(state.tree, verdict.parts, member.mode), NAME_TOO_LONG);
      break;
    case "symlink":
      reason = refuseNameTooLong(() => makeOutputSymlink(state.tree, verdict.parts, verdict.target), NAME_TOO_LONG);
      break;
    case "file": {
      if (bodySize <= SMALL_FILE_BYTES) return { kind: "small", member, parts: verdict.parts };
      const opened = refuseNameTooLong(
        (): ReturnType<typeof openOutputFile> => openOutputFile(state.tree, verdict.parts),
        { reason: NAME_TOO_LONG },
      );
      if ("file" in opened) return { kind: "large", member, file: opened.file };
      reason = opened.reason;
      break;
    }
  }
  if (reason !== undefined) state.refused.push({ path: member.name, reason });
  return bodySize > 0 ? { kind: "skip" } : undefined;
}

function recordWritten(state: ExtractionState, written: ExtractedFile): void {
  state.files.add(written);
  state.bytesWritten += written.size;
}

const NAME_TOO_LONG = "name too long for the host file system";

/** A name the host file system cannot hold is the archive's problem, not the host's: `refusal` stands for the entry. */
function refuseNameTooLong<T>(write: () => T, refusal: T): T {
  try {
    return write();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENAMETOOLONG") throw error;
    return refusal;
  }
}

function stopAt(state: ExtractionState, path: string, reason: string): "stop" {
  state.refused.push({ path, reason });
  state.limitReached = true;
  return "stop";
}

function toFailure(error: unknown, state: ExtractionState): Failure {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof TarFormatError)
    return {
      message: `output archive is truncated or corrupt after ${state.entries} entries: ${message}`,
      cause: error,
    };
  return { message: `extracting the output archive failed: ${message}`, cause: error };
}

/**
 * Builds the report, sorting the files in slices of SLICE_MS that let the event loop run between them.
 * The files list is the one thing kept per file: it goes back to the caller and into result.json. It stays
 * bytes to the end: the WrittenFileList (path, hex digest and size, about 0.1 KiB per file) plus a 4-byte
 * index per file in path order (FilesByPath, 8 bytes while sorting). Objects are made only when a file is
 * read from it. Turning it into {path, size, sha256} objects (about 0.2 KiB live each) made V8's young
 * generation grow to 32 MiB at 96,000 files and the runner's RSS jump by about 40 MiB, past 150 MiB.
 * Everything else the extraction holds is O(1) per file, plus one path per directory in the tree's knownDirs.
 */
async function buildReportInSlices(state: ExtractionState): Promise<ExtractReport> {
  return {
    files: await FilesByPath.of(state.files, SLICE_MS),
    refused: [...state.refused],
    bytes: state.bytesWritten,
    limitReached: state.limitReached,
    entries: state.entries,
    nameNewlines: state.nameNewlines,
  };
}
