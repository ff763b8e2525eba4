// Extracts the outputs archive coming back from the pod (hostile input) into a host directory.
//
// Why tar-stream and our own writer rather than node-tar's Unpack: node-tar validates paths but writes
// any symlink target as is (a `m -> x/..` plus `x -> .` pair escapes), reports its own refusals only as
// warnings without telling which entries were really written, cannot hash a file while writing it
// without swapping its internal streams, and has no way to stop reading mid-archive and settle at once
// when a limit is hit. With tar-stream we see every header before a byte is written, write through
// O_NOFOLLOW/O_EXCL file descriptors after checking every parent with lstat (once per directory: see
// OutputTree in output-writer.ts for why remembering them is safe), and stop consuming at will.
import { mkdir, realpath } from "node:fs/promises";
import type { Readable } from "node:stream";
import * as tarStream from "tar-stream";
import { classifyEntry } from "./entry-policy.js";
import type { EntryVerdict } from "./entry-policy.js";
import {
  EntryBodyError,
  createOutputTree,
  makeOutputDirectory,
  makeOutputSymlink,
  writeOutputFile,
} from "./output-writer.js";
import type { OutputTree } from "./output-writer.js";

/** Budgets for one extraction; see extractOutputs for what counts. */
export interface ExtractLimits {
  readonly maxBytes: number;
  readonly maxEntries: number;
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
  readonly files: readonly ExtractedFile[];
  readonly refused: readonly RefusedEntry[];
  readonly bytes: number;
  readonly limitReached: boolean;
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
  /** Every file written, in archive order, duplicates included (buildReport keeps the last of each path). */
  readonly files: ExtractedFile[];
  readonly refused: RefusedEntry[];
  entries: number;
  bytesWritten: number;
  bytesRead: number;
  limitReached: boolean;
  archiveEnd: number;
}

type EntryOutcome = "continue" | "stop";

/** Longest stretch of entries handled before yielding to the event loop (the daemon embeds this library). */
const SLICE_MS = 5;

/**
 * Extracts `archive` (as made by `tar -cf - -C /outputs .`) into `destDir`, creating it if missing.
 * Only regular files, directories and relative symlinks that stay inside destDir are written; absolute
 * or ".." paths, hard links, devices, fifos, unsafe symlinks, writes through a symlink and paths taken by
 * something of another kind are refused and listed in `refused`. Files get mode `(mode & 0o755) | 0o600`,
 * directories `(mode & 0o755) | 0o700`, and their mtime; sha256 and size are computed while streaming.
 * destDir is expected to be empty or to hold only trusted content (its existing symlinks are not vetted,
 * though nothing is ever written through one).
 *
 * Limits: every entry counts toward maxEntries (directories, refused entries and "./" included). Content
 * bytes read count toward maxBytes, written or discarded (so refused bodies cannot make us read forever);
 * `bytes` reports the written ones. The entry that would exceed a limit is refused ("over the ... limit")
 * and extraction stops right there: limitReached is true, the promise resolves without reading further,
 * and `archive` is left paused and not destroyed (the caller kills the source).
 *
 * Rejects with OutputArchiveError when the archive is truncated (mid-entry, or without an end-of-archive
 * block after the last entry), corrupt, or its source errors, and when the host file system fails. Its
 * `partial` report lists the files completely written before; they stay on disk, a half-written file is
 * removed. Throws a TypeError (as a rejection) for negative or non-integer limits.
 */
export async function extractOutputs(archive: Readable, destDir: string, limits: ExtractLimits): Promise<ExtractReport> {
  assertValidLimits(limits);
  await mkdir(destDir, { recursive: true });
  const state: ExtractionState = {
    tree: createOutputTree(await realpath(destDir)),
    limits,
    files: [],
    refused: [],
    entries: 0,
    bytesWritten: 0,
    bytesRead: 0,
    limitReached: false,
    archiveEnd: 0,
  };
  return runExtraction(archive, state);
}

function assertValidLimits(limits: ExtractLimits): void {
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 0) throw new TypeError(`${name} must be a non-negative integer, got ${String(value)}`);
  }
}

function runExtraction(archive: Readable, state: ExtractionState): Promise<ExtractReport> {
  return new Promise((resolve, reject) => {
    const extract = tarStream.extract();
    let settled = false;
    let received = 0;
    let sourceEnded = false;
    let sliceStartedAt = performance.now();

    const onData = (chunk: Buffer): void => {
      received += chunk.byteLength;
      if (!extract.write(chunk)) archive.pause();
    };
    const onDrain = (): void => {
      if (!settled) archive.resume();
    };
    const onEnd = (): void => {
      sourceEnded = true;
      extract.end(null);
    };
    const onSourceClose = (): void => {
      if (!sourceEnded) settle(new OutputArchiveError("output archive is truncated: its source closed before the end", buildReport(state)));
    };
    const onSourceError = (error: Error): void => {
      settle(new OutputArchiveError(`reading the output archive failed: ${error.message}`, buildReport(state), { cause: error }));
    };
    const settle = (outcome: ExtractReport | OutputArchiveError): void => {
      if (settled) return;
      settled = true;
      archive.off("data", onData);
      archive.off("end", onEnd);
      archive.off("close", onSourceClose);
      archive.pause();
      extract.destroy();
      if (outcome instanceof OutputArchiveError) reject(outcome);
      else resolve(outcome);
    };
    const failWith = (error: unknown): void => {
      settle(toArchiveError(error, state));
    };

    extract.on("entry", (header, body, next) => {
      // A body fails only when the whole archive does; that error reaches us through `extract`.
      body.on("error", () => undefined);
      state.archiveEnd = entryEnd(header);
      handleEntry(state, header, body).then((outcome) => {
        if (outcome === "stop") settle(buildReport(state));
        else if (performance.now() - sliceStartedAt < SLICE_MS) next();
        else {
          // Small files are written synchronously (output-writer.ts): let timers and I/O run every SLICE_MS.
          setImmediate(() => {
            sliceStartedAt = performance.now();
            if (!settled) next();
          });
        }
      }, failWith);
    });
    extract.on("drain", onDrain);
    extract.on("error", (error) => {
      settle(new OutputArchiveError(`output archive is truncated or corrupt after ${state.entries} entries: ${error.message}`, buildReport(state), { cause: error }));
    });
    extract.on("finish", () => {
      if (received < state.archiveEnd + 512) {
        const detail = received === 0 ? "it is empty" : "it ends without an end-of-archive block";
        settle(new OutputArchiveError(`output archive is truncated: ${detail}`, buildReport(state)));
      } else {
        settle(buildReport(state));
      }
    });
    archive.on("error", onSourceError);
    archive.on("data", onData);
    archive.on("end", onEnd);
    archive.on("close", onSourceClose);
    archive.resume();
  });
}

async function handleEntry(state: ExtractionState, header: tarStream.Header, body: AsyncIterable<unknown>): Promise<EntryOutcome> {
  state.entries += 1;
  const { maxEntries, maxBytes } = state.limits;
  if (state.entries > maxEntries) return stopAt(state, header.name, `over the entry limit: the archive has more than ${maxEntries} entries`);

  const verdict = classifyEntry(header);
  const bodySize = header.type === "directory" ? 0 : header.size;
  if (state.bytesRead + bodySize > maxBytes) {
    const overLimit = `over the size limit: ${bodySize} more bytes would exceed ${maxBytes} (${state.bytesRead} already read)`;
    return stopAt(state, header.name, verdict.kind === "refuse" ? `${verdict.reason}; ${overLimit}` : overLimit);
  }

  const { reason, bodyConsumed } = await applyVerdict(state, verdict, header, body).catch(refuseUnrepresentableName);
  if (reason !== undefined) state.refused.push({ path: header.name, reason });
  if (bodySize > 0 && !bodyConsumed) await discardBody(header.name, body);
  state.bytesRead += bodySize;
  return "continue";
}

/** Writes what the verdict allows; `reason` is set when the entry was refused. */
async function applyVerdict(
  state: ExtractionState,
  verdict: EntryVerdict,
  header: tarStream.Header,
  body: AsyncIterable<unknown>,
): Promise<{ readonly reason?: string; readonly bodyConsumed: boolean }> {
  switch (verdict.kind) {
    case "root":
      return { bodyConsumed: false };
    case "refuse":
      return { reason: verdict.reason, bodyConsumed: false };
    case "directory":
      return { reason: await makeOutputDirectory(state.tree, verdict.parts, header.mode), bodyConsumed: false };
    case "symlink":
      return { reason: await makeOutputSymlink(state.tree, verdict.parts, verdict.target), bodyConsumed: false };
    case "file": {
      const result = await writeOutputFile(state.tree, verdict.parts, header.mode, header.mtime, header.size, body);
      if ("reason" in result) return { reason: result.reason, bodyConsumed: false };
      state.files.push(result.written);
      state.bytesWritten += result.written.size;
      return { bodyConsumed: true };
    }
  }
}

/** A name the host file system cannot hold is the archive's problem, not the host's: refuse the entry. */
function refuseUnrepresentableName(error: unknown): { readonly reason: string; readonly bodyConsumed: boolean } {
  if ((error as NodeJS.ErrnoException).code !== "ENAMETOOLONG") throw error;
  return { reason: "name too long for the host file system", bodyConsumed: false };
}

function stopAt(state: ExtractionState, path: string, reason: string): EntryOutcome {
  state.refused.push({ path, reason });
  state.limitReached = true;
  return "stop";
}

async function discardBody(path: string, body: AsyncIterable<unknown>): Promise<void> {
  try {
    for await (const chunk of body) void chunk;
  } catch (error) {
    throw new EntryBodyError(path, { cause: error });
  }
}

/** Offset just past the entry's content; tar-stream sets byteOffset (start of content) at runtime. */
function entryEnd(header: tarStream.Header): number {
  const start = (header as tarStream.Header & { byteOffset?: number }).byteOffset ?? 0;
  const size = header.type === "directory" ? 0 : header.size;
  return start + Math.ceil(size / 512) * 512;
}

function toArchiveError(error: unknown, state: ExtractionState): OutputArchiveError {
  const message = error instanceof Error ? error.message : String(error);
  const partial = buildReport(state);
  if (error instanceof EntryBodyError) {
    return new OutputArchiveError(`output archive is truncated or corrupt after ${state.entries} entries: ${message}`, partial, { cause: error });
  }
  return new OutputArchiveError(`extracting the output archive failed: ${message}`, partial, { cause: error });
}

/**
 * The files list is the one thing kept per file (about 0.2 KiB live each, 19 MiB at 100,000 files; see
 * bench/RESULTS.md): it goes back to the caller and into result.json. Everything else the extraction holds
 * is O(1) per file, plus one path per directory in the tree's knownDirs.
 */
function buildReport(state: ExtractionState): ExtractReport {
  // A stable sort keeps duplicates in archive order: the last one of each path is the file on disk.
  const sorted = [...state.files].sort((left, right) => (left.path < right.path ? -1 : left.path > right.path ? 1 : 0));
  const files = sorted.filter((entry, index) => sorted[index + 1]?.path !== entry.path);
  return { files, refused: [...state.refused], bytes: state.bytesWritten, limitReached: state.limitReached };
}
