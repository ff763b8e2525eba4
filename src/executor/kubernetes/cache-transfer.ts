// Moves one cache's archive between the host and the pod: into `helper.sh cache-restore`, out of `helper.sh cache-save`.
import { pipeline } from "node:stream/promises";
import { CancelledError, describeError } from "../../core/errors.js";
import { CacheDecoderMissingError, type CacheSpec, type CacheWriter } from "../../workflow/cache-types.js";
import { describeExecSaid, isExecSuccess, type ExecEnd } from "../../cluster/exec.js";
import { describeHead, SNIFF_BYTES, sniffCompression } from "../../transfer/sniff-compression.js";
import {
  cacheHelperCommand,
  checkCacheRestoreReply,
  findMissingDecoder,
  parseCacheSaveStatus,
} from "../../pod/cache-script.js";
import { buildPodExec, type ExecutorContext } from "./context.js";
import type { RunPod } from "../executor.js";
import {
  CacheTransferError,
  type CacheArchive,
  type CacheArchiveGate,
  type CacheSaveOutcome,
} from "../cache-archive.js";

/** Refuses paths a cache must never hold: the runner's own files and the secrets (which are still in the pod at save). */
export function findForbiddenCachePath(paths: readonly string[]): string | undefined {
  for (const path of paths) {
    if (!path.startsWith("/")) return `${JSON.stringify(path)} is not absolute`;
    if (path.includes("\n") || path.includes("\0")) return `${JSON.stringify(path)} contains a newline or NUL`;
    const parts = path.split("/").filter(Boolean);
    if (parts.length === 0) return "/ itself cannot be cached";
    if (parts.includes("..")) return `${JSON.stringify(path)} contains ..`;
    if (parts[0] === "knotless" || parts[0] === "knotless-secrets")
      return `${path} is the runner's (its helper, scripts and secrets live under /${parts[0]})`;
  }
  return undefined;
}

/**
 * Streams `archive` into `cache-restore <compression>` in the pod (gunzip, zstd -d or cat | tar -x -C /) and returns
 * the bytes sent. The pod's last line is the proof it was extracted whole: gunzip checked the gzip trailer's CRC32 and
 * length (zstd -d the frames' checksums) and tar read to its end. A pod without the entry's decompressor says so before
 * it reads a byte: CacheDecoderMissingError, nothing extracted.
 * Without that line (cut, corrupt, a path that could not be written, an exec that ended early) it throws
 * CacheTransferError, and the pod has removed those of `spec.paths` that were absent before; a store stream that
 * fails (CacheCorruptError) ends the pod's stdin there and throws one with `corrupt` once the pod has judged what it
 * got. CancelledError when the run's signal is aborted.
 */
export async function restoreCacheArchive(
  ctx: ExecutorContext,
  pod: RunPod,
  spec: CacheSpec,
  archive: CacheArchive,
  gate?: CacheArchiveGate,
): Promise<{ bytes: number }> {
  const forbidden = findForbiddenCachePath(spec.paths);
  if (forbidden !== undefined) {
    archive.stream.destroy();
    throw new CacheTransferError(`not restored: ${forbidden}`);
  }
  const exec = await ctx.cluster.exec({
    ...buildPodExec(ctx, pod.name, cacheHelperCommand.restore(archive.compression, spec.paths)),
    stdin: { kind: "pipe" },
  });
  let bytes = 0;
  let reply = "";
  const stdin = exec.stdin!;
  // The store's stream failing (its sha256 did not match, a read error) or the gate refusing the entry ends the pod's
  // stdin where it stopped, and the exec is awaited as usual: gunzip in the pod judges the bytes by the gzip trailer
  // and, on a cut or a mismatch, removes what it extracted before the exec returns, so no step starts beside a
  // clean-up still running.
  let readError: unknown;
  let refusal: string | undefined;
  // Through the gate, the pod gets only bytes whose tar headers were checked on this host (src/cache/archive-gate.ts),
  // and the last chunk only once the archive's end was seen: a refused or cut entry never reaches the pod whole.
  const source = gate ? archive.stream.pipe(gate.stream) : archive.stream;
  const cut = (): void => {
    source.unpipe(stdin);
    stdin.end();
  };
  archive.stream.on("data", (chunk: Buffer) => (bytes += chunk.length));
  archive.stream.once("error", (error: unknown) => {
    readError = error;
    cut();
  });
  if (gate) {
    gate.stream.on("error", () => {}); // its done says why
    gate.done.catch((error: unknown) => {
      refusal = describeError(error);
      cut();
    });
  }
  stdin.on("error", () => archive.stream.destroy()); // the exec gone early: its end says why
  // A pod without the decompressor says so before it reads a byte, then waits for stdin's end: send no more.
  exec.stdout.setEncoding("utf8").on("data", (text: string) => {
    reply += text;
    if (!stdin.writableEnded && findMissingDecoder(reply) !== undefined) cut();
  });
  source.pipe(stdin);
  const end = await exec.ended;
  archive.stream.destroy();
  gate?.stream.destroy();
  if (gate)
    await settleWithin(
      gate.done.catch(() => undefined),
      1000,
    ); // settled by now, but for a source that failed mid-archive
  if (ctx.signal.aborted) throw new CancelledError();
  // Said before it read a byte, and it touched no path: the caller may send the entry decompressed instead.
  if (findMissingDecoder(reply) !== undefined && isExecSuccess(end))
    throw new CacheDecoderMissingError(archive.compression);
  const inPod =
    checkCacheRestoreReply(reply) === undefined
      ? "; the pod's gunzip found the bytes it got whole, so its paths hold them"
      : "; the pod removed what it extracted";
  if (readError !== undefined) {
    const corrupt = (readError as Error).name === "CacheCorruptError";
    throw new CacheTransferError(
      `${corrupt ? "the stored entry is corrupt" : "reading the stored entry failed"}: ${describeError(readError)}${inPod}`,
      corrupt ? "corrupt" : undefined,
      { cause: readError },
    );
  }
  if (refusal !== undefined)
    throw new CacheTransferError(`the stored entry was refused on this host: ${refusal}${inPod}`, "refused");
  const problem = checkCacheRestoreReply(reply);
  if (problem !== undefined) throw new CacheTransferError(`${problem}${describeEnd(end)}`);
  return { bytes };
}

/**
 * Runs `cache-save` in the pod (`tar -c <paths that exist> | zstd -1`, or `gzip -1` where the image has no zstd) and
 * streams its stdout into the store's writer, never held in memory. Commits only when kubectl exited 0, the pod said
 * tar and its compressor both exited 0, and the archive's first bytes are gzip's or zstd's (the compression the entry
 * records, whatever the pod said); aborts the writer otherwise and throws CacheTransferError. The archive is not
 * checked on the way out: its bytes are stored as they came, and the gate checks them on every way in (a hostile one
 * is refused there, and removed), so a save costs the host only the write and its sha256. When no path exists in the
 * pod, nothing is stored ("nothing"). CancelledError when the run's signal is aborted (the writer is aborted first).
 */
export async function saveCacheArchive(
  ctx: ExecutorContext,
  pod: RunPod,
  spec: CacheSpec,
  writer: CacheWriter,
): Promise<CacheSaveOutcome> {
  const forbidden = findForbiddenCachePath(spec.paths);
  if (forbidden !== undefined) {
    await writer.abort();
    throw new CacheTransferError(`not saved: ${forbidden}`);
  }
  const exec = await ctx.cluster.exec({
    ...buildPodExec(ctx, pod.name, cacheHelperCommand.save(spec.paths)),
    stdin: { kind: "none" },
  });
  let bytes = 0;
  let head = Buffer.alloc(0);
  const copied = pipeline(
    exec.stdout,
    async function* (source: AsyncIterable<Buffer>) {
      for await (const chunk of source) {
        bytes += chunk.length;
        if (head.length < SNIFF_BYTES) head = Buffer.concat([head, chunk.subarray(0, SNIFF_BYTES - head.length)]);
        yield chunk;
      }
    },
    writer.stream,
  ).then(
    () => undefined,
    (error: unknown) => error,
  );
  const copyError = await copied;
  if (copyError !== undefined) exec.kill();
  const end = await exec.ended;
  const fail = async (message: string, cause?: unknown): Promise<never> => {
    await writer.abort();
    if (ctx.signal.aborted) throw new CancelledError();
    throw new CacheTransferError(message, undefined, cause === undefined ? undefined : { cause });
  };
  if (ctx.signal.aborted) return fail("cancelled");
  const status = parseCacheSaveStatus(end.tags);
  if (!isExecSuccess(end)) return fail(`the pod's save failed (${end.how}): ${describeExecSaid(end)}`);
  if (copyError !== undefined) return fail(`writing the archive failed: ${describeError(copyError)}`, copyError);
  if (status.outcome === undefined)
    return fail(`the pod did not confirm the save (the exec ended before its last line)${describeEnd(end)}`);
  if (status.outcome.kind === "none") {
    await writer.abort();
    return { status: "nothing", missing: status.missing };
  }
  if (status.outcome.tar !== "0" || status.outcome.status !== "0")
    return fail(
      `the pod could not pack the paths (tar exited ${status.outcome.tar}, ${status.outcome.compressor} ${status.outcome.status}): ${describeExecSaid(end)}`,
    );
  const compression = sniffCompression(head, true);
  if (compression === undefined || compression === "short")
    return fail(`the archive was refused, nothing stored: ${describeHead(head)}`);
  const committed = await writer.commit(compression);
  return { status: committed, bytes, missing: status.missing };
}

/** The verdict if it settles within `ms`, else undefined. */
async function settleWithin<T>(verdict: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  try {
    return await Promise.race([verdict, late]);
  } finally {
    clearTimeout(timer);
  }
}

function describeEnd(end: ExecEnd): string {
  const said = describeExecSaid(end);
  return isExecSuccess(end) ? (said ? ` (${said})` : "") : ` (${end.how}${said ? `: ${said}` : ""})`;
}
