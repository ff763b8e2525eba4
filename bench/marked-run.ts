// Runs a plain sh script and timestamps, as they arrive, its `@label` marker lines and the first other output after each.
import { spawn } from "node:child_process";

export interface Mark {
  readonly label: string;
  /** The rest of the marker line after the label. */
  readonly value: string;
  /** Epoch ms the line arrived on the pipe. */
  readonly at: number;
}

export interface MarkedRun {
  readonly spawnedAt: number;
  readonly exitedAt: number;
  readonly wallMs: number;
  readonly exitCode: number | null;
  readonly marks: readonly Mark[];
  /** Per marker index: epoch ms of the first non-marker stdout byte that arrived after it. */
  readonly firstOutputAfter: ReadonlyMap<number, number>;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Spawns `sh -c script` and watches its stdout. A marker is a whole line `@label value...` written with the shell's
 * builtin echo (no fork, so the marks cost the script nothing measurable); anything else is the script's output.
 */
export function runMarkedScript(script: string, env: Readonly<Record<string, string>>): Promise<MarkedRun> {
  return new Promise((resolve, reject) => {
    const spawnedAt = Date.now();
    const started = process.hrtime.bigint();
    const child = spawn("sh", ["-c", script], { env, stdio: ["ignore", "pipe", "pipe"] });
    const marks: Mark[] = [];
    const firstOutputAfter = new Map<number, number>();
    let pending = "";
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => {
      const at = Date.now();
      stdout += chunk;
      pending += chunk;
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        const marker = /^@(\S+) ?(.*)$/.exec(line);
        if (marker) marks.push({ label: marker[1] as string, value: marker[2] as string, at });
        else if (!firstOutputAfter.has(marks.length - 1)) firstOutputAfter.set(marks.length - 1, at);
      }
      // Output without its newline yet still counts as arrived.
      if (pending !== "" && !pending.startsWith("@") && !firstOutputAfter.has(marks.length - 1))
        firstOutputAfter.set(marks.length - 1, at);
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-20_000);
    });
    child.once("error", reject);
    child.once("close", (exitCode) => {
      const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
      resolve({ spawnedAt, exitedAt: spawnedAt + wallMs, wallMs, exitCode, marks, firstOutputAfter, stdout, stderr });
    });
  });
}

/** The first mark with this label; throws when the script never wrote it. */
export function findMark(run: MarkedRun, label: string): Mark & { readonly index: number } {
  const index = run.marks.findIndex((m) => m.label === label);
  if (index < 0)
    throw new Error(`the plain script never wrote @${label} (exit ${run.exitCode}):\n${run.stderr.slice(-3000)}`);
  return { ...(run.marks[index] as Mark), index };
}

/** Throws with the tail of stderr when the script did not exit 0. */
export function assertMarkedSucceeded(what: string, run: MarkedRun): void {
  if (run.exitCode !== 0)
    throw new Error(`${what} exited ${run.exitCode}:\n${run.stderr.slice(-4000)}\n${run.stdout.slice(-2000)}`);
}
