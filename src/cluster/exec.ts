// What an exec into the run pod is, whatever the transport: the request, the running session, and how it ended.
import type { Readable, Writable } from "node:stream";
import type { ClusterError } from "./errors.js";

/**
 * A stderr line the runner's in-pod scripts print to tell the runner how they ended (`knotless-outputs-entries 3`,
 * `knotless-cache-saved ...`): every such line starts with this. The transport hands them to the caller apart from
 * the rest of stderr (ExecEnd.tags), so no caller has to tell them from the transport's own words.
 */
export const STATUS_TAG_PREFIX = "knotless-";

/** Splits an exec's stderr into the pod's status-tag lines and the rest. */
export function splitStatusTags(stderr: string): { tags: string; rest: string } {
  const tags: string[] = [];
  const rest: string[] = [];
  const lines = stderr.split("\n");
  const last = lines.pop() ?? ""; // "" after a final newline; an unterminated last line otherwise
  for (const line of lines) (line.startsWith(STATUS_TAG_PREFIX) ? tags : rest).push(`${line}\n`);
  if (last !== "")
    (last.startsWith(STATUS_TAG_PREFIX) ? tags : rest).push(last.startsWith(STATUS_TAG_PREFIX) ? `${last}\n` : last);
  return { tags: tags.join(""), rest: rest.join("") };
}

/** Where the command's stdin comes from. */
export type ExecStdin =
  /** No stdin: the command reads end-of-file. */
  | { readonly kind: "none" }
  /** The caller writes ExecSession.stdin; ending it half-closes the command's stdin while stdout keeps flowing. */
  | { readonly kind: "pipe" }
  /**
   * The bytes of this stream (another child's stdout, say), to its end, then half-closed. The transport owns the
   * stream from the call on: kubectl gets its descriptor, so the bytes skip this process, and the caller's handle is
   * closed; an in-process transport reads it with backpressure.
   */
  | { readonly kind: "stream"; readonly from: Readable };

export interface ExecRequest {
  /** The pod's namespace; undefined: the kubeconfig context's. */
  readonly namespace: string | undefined;
  readonly pod: string;
  readonly container: string;
  /** The argv run in the container (no shell of ours around it). Never holds a secret: secrets go over stdin. */
  readonly command: readonly string[];
  readonly stdin: ExecStdin;
  /** Aborting it ends the session locally, as kill() does. */
  readonly signal?: AbortSignal;
  /**
   * The consumer gives every stdout chunk back (ExecSession.giveBack) once done with it, so the transport may read
   * into a few reused buffers: for the one big read of a run, the outputs download. A transport may ignore it.
   */
  readonly reuseBuffers?: boolean;
}

/**
 * How an exec ended. `exit`: the command ran and the transport read its exit status (0 is success). `failed`: no
 * exit status: `error` says why (CutStreamError when the stream ended without one, UnavailableError with reason
 * `exec-not-ready` when the exec could not be set up and nothing ran, ForbiddenError, UnauthorizedError, ...).
 */
export type ExecEnd =
  | (ExecEndCommon & { readonly kind: "exit"; readonly code: number })
  | (ExecEndCommon & { readonly kind: "failed"; readonly error: ClusterError });

interface ExecEndCommon {
  /** The status-tag lines (STATUS_TAG_PREFIX) the command wrote to stderr, each ending with "\n"; "" when none. */
  readonly tags: string;
  /** The rest of stderr, bounded to its last 64 KiB: the command's own words (with kubectl, kubectl's too). */
  readonly stderr: string;
  /** How it ended in the transport's words, for messages: `kubectl exit 2`, `exit status 2`, `stream cut`. */
  readonly how: string;
}

/**
 * A running exec. The caller must consume `stdout` (it is paused while unread: backpressure reaches the pod). stderr
 * is handed over at the end (ExecEnd: the status tags apart, the rest bounded), not streamed: what the runner must
 * stream, a step's own stderr included, its in-pod helper multiplexes onto stdout (src/pod/follow-frames.ts). A
 * transport still reads stderr with backpressure and never lets it grow without bound.
 */
export interface ExecSession {
  /** The command's stdout; ends when the command's stdout closed or the session ended. */
  readonly stdout: Readable;
  /** The command's stdin when the request asked for a pipe, else null. `end()` half-closes it. */
  readonly stdin: Writable | null;
  /**
   * Resolves with how the exec ended once it ended and stdout was read to its end. Rejects only with the transport's
   * own failure to start (InfraError `kubectl-missing`).
   */
  readonly ended: Promise<ExecEnd>;
  /** Ends the session locally (not what it started in the pod); it then ends `failed` with CutStreamError. Idempotent. */
  kill(): void;
  /** Why the transport could not do what the request asked beyond the exec itself (reuseBuffers), for an info notice. */
  readonly fallback?: string;
  /**
   * Present when stdout's chunks are views of reused buffers (the request's `reuseBuffers`, where the transport does
   * it): give each chunk back once done with it. Absent: chunks are the consumer's to keep.
   */
  readonly giveBack?: (chunk: Buffer) => void;
}

/** The last meaningful line of an exec's stderr, for messages; "" when it wrote none. */
export function summarizeExecStderr(stderr: string): string {
  const lines = stderr
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
  return lines.at(-1) ?? "";
}

/** What an exec's end says, in one line: the error's message when it failed, else the last line of its stderr. */
export function describeExecSaid(end: ExecEnd): string {
  return end.kind === "failed" ? end.error.message : summarizeExecStderr(end.stderr);
}

/** Whether an exec ended with the command's exit code 0. */
export function isExecSuccess(end: ExecEnd): boolean {
  return end.kind === "exit" && end.code === 0;
}
