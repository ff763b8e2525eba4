// An exec whose stdout is small: written stdin (if any), stdout collected (bounded), and how it ended.
import { ClusterError } from "./errors.js";
import type { RunCluster } from "./cluster.js";
import type { ExecEnd, ExecRequest } from "./exec.js";

/** What a collected exec gave: its end and everything it wrote to stdout. */
export interface ExecOutput {
  readonly end: ExecEnd;
  readonly stdout: string;
}

/** The most stdout a collected exec keeps: its callers read a few lines (a pod could print without end). */
export const MAX_COLLECTED_STDOUT_BYTES = 1024 * 1024;

/**
 * Runs an exec to its end with `stdin` (text, then half-closed) when given, and collects stdout as UTF-8: for the
 * short calls (a kill, a listing, the secrets). Past `maxBytes` of stdout the session is killed and the exec ends
 * `failed`, saying so. Rejects only as Cluster.exec does.
 */
export async function runExec(
  cluster: Pick<RunCluster, "exec">,
  request: Omit<ExecRequest, "stdin">,
  stdin?: string,
  maxBytes = MAX_COLLECTED_STDOUT_BYTES,
): Promise<ExecOutput> {
  const session = await cluster.exec({ ...request, stdin: stdin === undefined ? { kind: "none" } : { kind: "pipe" } });
  if (session.stdin) {
    session.stdin.on("error", () => {}); // the exec may end before reading all of it; its end says why
    session.stdin.end(stdin);
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  let overflowed = false;
  session.stdout.on("data", (chunk: Buffer) => {
    if (overflowed) return;
    bytes += chunk.length;
    if (bytes > maxBytes) {
      overflowed = true;
      session.kill();
      return;
    }
    chunks.push(chunk);
  });
  const end = await session.ended;
  if (overflowed) {
    const error = new ClusterError("other", `the command printed more than ${maxBytes} bytes, more than it may`);
    return {
      end: { kind: "failed", error, tags: end.tags, stderr: end.stderr, how: "stdout past its bound" },
      stdout: "",
    };
  }
  return { end, stdout: Buffer.concat(chunks).toString("utf8") };
}
