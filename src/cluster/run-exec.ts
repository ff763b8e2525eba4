// An exec whose stdout is small: written stdin (if any), stdout collected, and how it ended.
import type { RunCluster } from "./cluster.js";
import type { ExecEnd, ExecRequest } from "./exec.js";

/** What a collected exec gave: its end and everything it wrote to stdout. */
export interface ExecOutput {
  readonly end: ExecEnd;
  readonly stdout: string;
}

/**
 * Runs an exec to its end with `stdin` (text, then half-closed) when given, and collects stdout as UTF-8: for the
 * short calls (a kill, a listing, the secrets). Rejects only as Cluster.exec does.
 */
export async function runExec(
  cluster: Pick<RunCluster, "exec">,
  request: Omit<ExecRequest, "stdin">,
  stdin?: string,
): Promise<ExecOutput> {
  const session = await cluster.exec({ ...request, stdin: stdin === undefined ? { kind: "none" } : { kind: "pipe" } });
  if (session.stdin) {
    session.stdin.on("error", () => {}); // the exec may end before reading all of it; its end says why
    session.stdin.end(stdin);
  }
  const chunks: Buffer[] = [];
  session.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
  const end = await session.ended;
  return { end, stdout: Buffer.concat(chunks).toString("utf8") };
}
