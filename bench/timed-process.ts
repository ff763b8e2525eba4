// Spawns one process, measures its wall time and (optionally) its peak RSS from /proc/<pid>/status VmHWM.
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";

export interface TimedRun {
  readonly wallMs: number;
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Highest VmHWM seen while polling, in KiB; undefined when not watched. */
  readonly peakRssKiB?: number;
  /** How many VmHWM samples were read. */
  readonly rssSamples?: number;
  /** VmRSS over time: [epoch ms, KiB], one per sample. */
  readonly rssTimeline?: ReadonlyArray<readonly [number, number]>;
}

export interface TimedOptions {
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  readonly stdin?: string;
  /** Poll VmHWM of the spawned process every this many ms (the process itself, not its children). */
  readonly watchRssEveryMs?: number;
  /** Keep at most this many bytes of stdout/stderr (the tail). */
  readonly maxOutputBytes?: number;
}

/** VmHWM (peak resident set) and VmRSS of a live process in KiB, or undefined once it is gone or a zombie. */
export async function readRssKiB(pid: number): Promise<{ peak: number; current: number } | undefined> {
  const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  const peak = /^VmHWM:\s+(\d+)\s+kB/m.exec(status)?.[1];
  const current = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
  return peak && current ? { peak: Number(peak), current: Number(current) } : undefined;
}

function keepTail(chunks: Buffer[], limit: number): string {
  return Buffer.concat(chunks).subarray(-limit).toString("utf8");
}

/** Runs command to completion; never rejects on a non-zero exit (the caller checks exitCode). */
export function runTimed(command: string, args: readonly string[], options: TimedOptions = {}): Promise<TimedRun> {
  const limit = options.maxOutputBytes ?? 1024 * 1024;
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(command, args, {
      env: options.env,
      cwd: options.cwd,
      stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let stdoutBytes = 0;
    let stderrBytes = 0;
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout.push(chunk);
      stdoutBytes += chunk.length;
      while (stdoutBytes - (stdout[0]?.length ?? 0) > limit) stdoutBytes -= (stdout.shift() as Buffer).length;
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr.push(chunk);
      stderrBytes += chunk.length;
      while (stderrBytes - (stderr[0]?.length ?? 0) > limit) stderrBytes -= (stderr.shift() as Buffer).length;
    });
    if (options.stdin !== undefined && child.stdin) {
      child.stdin.on("error", () => undefined);
      child.stdin.end(options.stdin);
    }
    let peak: number | undefined;
    let samples = 0;
    const timeline: Array<readonly [number, number]> = [];
    let polling = false;
    const timer =
      options.watchRssEveryMs !== undefined && child.pid !== undefined
        ? setInterval(() => {
            if (polling) return;
            polling = true;
            void readRssKiB(child.pid as number).then((rss) => {
              polling = false;
              if (rss === undefined) return;
              samples += 1;
              peak = Math.max(peak ?? 0, rss.peak);
              timeline.push([Date.now(), rss.current]);
            });
          }, options.watchRssEveryMs)
        : undefined;
    child.once("error", (error) => {
      if (timer) clearInterval(timer);
      reject(error);
    });
    child.once("close", (exitCode, signal) => {
      if (timer) clearInterval(timer);
      const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
      resolve({
        wallMs,
        exitCode,
        signal,
        stdout: keepTail(stdout, limit),
        stderr: keepTail(stderr, limit),
        ...(timer ? { peakRssKiB: peak ?? 0, rssSamples: samples, rssTimeline: timeline } : {}),
      });
    });
  });
}

/** Throws with the tail of stderr when a run did not exit 0. */
export function assertSucceeded(what: string, run: TimedRun): void {
  if (run.exitCode === 0) return;
  throw new Error(
    `${what} exited ${run.exitCode ?? run.signal}:\n${run.stderr.slice(-4000)}\n${run.stdout.slice(-2000)}`,
  );
}
