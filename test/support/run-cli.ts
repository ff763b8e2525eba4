// Spawns the real CLI (bin/knotless-runner-k8s.js) and collects what it printed; can signal it mid-run.
import { execFileSync, spawn } from "node:child_process";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { RunResult } from "../../src/run/run-result.js";
import { Writable } from "node:stream";
import { makeTestTempDir } from "./temp-dir.js";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const CLI = join(REPO_ROOT, "bin", "knotless-runner-k8s.js");

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Sends `signal` once the console output (stdout + stderr) matches `when`. */
  readonly signalWhen?: { readonly when: RegExp; readonly signal: NodeJS.Signals };
  /** Signals sent in order, each once its pattern appears in the output (after the one before it was sent). */
  readonly signalsWhen?: ReadonlyArray<{ readonly when: RegExp; readonly signal: NodeJS.Signals }>;
  readonly timeoutMs?: number;
  /** Runs the CLI as this user and group (root's tests use nobody, 65534, to meet a file they cannot read). */
  readonly user?: { readonly uid: number; readonly gid: number };
}

export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliRun> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
      ...options.user,
    });
    let stdout = "";
    let stderr = "";
    const pending = [...(options.signalWhen ? [options.signalWhen] : []), ...(options.signalsWhen ?? [])];
    const check = (): void => {
      const next = pending[0];
      if (next && next.when.test(stdout + stderr)) {
        pending.shift();
        child.kill(next.signal);
      }
    };
    child.stdout.setEncoding("utf8").on("data", (text: string) => ((stdout += text), check()));
    child.stderr.setEncoding("utf8").on("data", (text: string) => ((stderr += text), check()));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 120_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

/** A fresh copy of examples/hello as a checkout, a steps file and an out dir. */
export function makeWorkspace(steps: string): {
  checkout: string;
  stepsFile: string;
  sharedSteps: string;
  out: string;
} {
  const dir = makeTestTempDir("knotless-e2e-");
  const checkout = join(dir, "checkout");
  cpSync(join(REPO_ROOT, "examples", "hello"), checkout, { recursive: true });
  const sharedSteps = join(dir, "shared-steps");
  cpSync(join(REPO_ROOT, "examples", "shared-steps"), sharedSteps, { recursive: true });
  const stepsFile = join(dir, "steps.tsv");
  writeFileSync(stepsFile, steps);
  return { checkout, stepsFile, sharedSteps, out: join(dir, "out") };
}

export function readResult(out: string): RunResult {
  return JSON.parse(readFileSync(join(out, "result.json"), "utf8")) as RunResult;
}

/** "kubectl" when a kubectl binary is on PATH, for tests that need the real one; undefined otherwise. */
export function findKubectlOnPath(): string | undefined {
  try {
    execFileSync("kubectl", ["version", "--client"], { stdio: "ignore" });
    return "kubectl";
  } catch {
    return undefined;
  }
}

/** A CLI started in the background: wait for its output, signal it, await its end. */
export interface StartedCli {
  readonly pid: number;
  /** Resolves once stdout + stderr match `pattern`; rejects after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  kill(signal: NodeJS.Signals): void;
  /** The run, with the time (epoch ms) the process ended. */
  readonly exited: Promise<CliRun & { readonly endedAt: number }>;
}

export function startCli(
  args: readonly string[],
  options: { env?: Readonly<Record<string, string | undefined>>; timeoutMs?: number } = {},
): StartedCli {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  let stdout = "";
  let stderr = "";
  const waiters = new Set<() => void>();
  const notify = (): void => waiters.forEach((check) => check());
  child.stdout.setEncoding("utf8").on("data", (text: string) => ((stdout += text), (output += text), notify()));
  child.stderr.setEncoding("utf8").on("data", (text: string) => ((stderr += text), (output += text), notify()));
  const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 180_000);
  const exited = new Promise<CliRun & { endedAt: number }>((resolvePromise, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      notify();
      resolvePromise({ code, stdout, stderr, endedAt: Date.now() });
    });
  });
  return {
    pid: child.pid ?? -1,
    exited,
    kill: (signal) => child.kill(signal),
    waitFor: (pattern, timeoutMs = 60_000) =>
      new Promise((resolvePromise, reject) => {
        const give = setTimeout(
          () => (
            waiters.delete(check),
            reject(new Error(`no ${pattern} in the output within ${timeoutMs} ms:\n${output}`))
          ),
          timeoutMs,
        );
        const check = (): void => {
          if (pattern.test(output)) {
            clearTimeout(give);
            waiters.delete(check);
            resolvePromise();
          } else if (child.exitCode !== null || child.signalCode !== null) {
            clearTimeout(give);
            waiters.delete(check);
            reject(new Error(`the CLI ended before ${pattern} appeared:\n${output}`));
          }
        };
        waiters.add(check);
        check();
      }),
  };
}

/**
 * Runs one command line in this process (src/cli/main.ts, as the bin does) with collecting writers for stdout and
 * stderr, and the environment this process has plus `env`. For tests of a command's output and exit code: a spawn
 * costs ~0.4 s of CPU. Commands that install process signal handlers (serve, executor, a real run) stay spawned.
 */
export async function runCliInProcess(
  args: readonly string[],
  options: { readonly env?: Readonly<Record<string, string | undefined>>; readonly timeoutMs?: number } = {},
): Promise<CliRun> {
  const { main } = await import("../../src/cli/main.js");
  let timer: NodeJS.Timeout | undefined;
  let stdout = "";
  let stderr = "";
  const collect = (append: (text: string) => void): Writable =>
    new Writable({
      decodeStrings: false,
      write(chunk: string | Buffer, _encoding, done) {
        append(typeof chunk === "string" ? chunk : chunk.toString("utf8"));
        done();
      },
    });
  const ran = main(args, {
    env: { ...process.env, ...options.env },
    stdout: collect((text) => (stdout += text)),
    stderr: collect((text) => (stderr += text)),
  });
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${args.join(" ")}: no end within ${options.timeoutMs} ms:\n${stdout}${stderr}`)),
      options.timeoutMs ?? 120_000,
    );
  });
  try {
    return { code: await Promise.race([ran, timedOut]), stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}
