// The one module that spawns kubectl: buffered calls for the API, streaming calls for exec.
import { spawn as nodeSpawn, spawnSync, type ChildProcess, type SpawnOptions } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { InfraError } from "../../core/errors.js";
import type { PooledStdout } from "./pooled-stdout.js";

export type SpawnFunction = (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;

export interface KubectlOptions {
  /** Path or name of the kubectl binary. */
  readonly binary: string;
  /** Injected for tests; defaults to node's spawn. */
  readonly spawn?: SpawnFunction;
  /** The environment kubectl runs with (resolved at the CLI edge). */
  readonly env?: NodeJS.ProcessEnv;
  /** Told of every call before it is spawned (the run log records them). */
  readonly onCall?: (args: readonly string[]) => void;
}

/** How a kubectl process ended. `exitCode` is -1 when it was killed by a signal. */
export interface KubectlExit {
  readonly exitCode: number;
  readonly signal: NodeJS.Signals | null;
  /** kubectl's own stderr (bounded to the last 64 KiB). */
  readonly stderr: string;
}

export interface KubectlOutput extends KubectlExit {
  readonly stdout: string;
  /** True when the call outlived its `timeoutMs` and was killed. */
  readonly timedOut?: boolean;
}

/** A running streaming call: read `stdout`, write `stdin` (when requested), await `exited`. */
export interface KubectlProcess {
  readonly stdout: Readable;
  readonly stdin: Writable | null;
  readonly exited: Promise<KubectlExit>;
  /** Ends the local kubectl (not what it started in the pod). Safe to call more than once. */
  kill(): void;
}

export interface KubectlCallOptions {
  readonly stdin?: string;
  readonly signal?: AbortSignal;
  /** Kills kubectl (and what it started) after this long: a call that hangs where --request-timeout does not reach. */
  readonly timeoutMs?: number;
}

export interface StreamOptions {
  /** Open a stdin pipe for the caller to write. */
  readonly stdin?: boolean;
  /**
   * Give kubectl this stream's descriptor as its stdin instead (another child's stdout: its bytes then go from that
   * process to kubectl without passing through node). The caller destroys its own handle once the call started.
   */
  readonly stdinFrom?: Readable;
  readonly signal?: AbortSignal;
  /** Called with stderr text as it arrives. */
  readonly onStderr?: (text: string) => void;
  /** Where kubectl writes its stdout (then `stdout` is its readable), instead of a pipe made for the call. */
  readonly stdout?: PooledStdout;
}

const MAX_STDERR = 64 * 1024;
/** runSync reads one object (a Job as JSON), never a stream. */
const MAX_SYNC_STDOUT = 4 * 1024 * 1024;
const KILL_GRACE_MS = 2000;

/** The kubectl client. Construct it at the CLI edge; nothing here runs at import time. */
export class Kubectl {
  readonly #binary: string;
  readonly #spawn: SpawnFunction;
  readonly #env: NodeJS.ProcessEnv | undefined;
  readonly #onCall: ((args: readonly string[]) => void) | undefined;

  constructor(options: KubectlOptions) {
    this.#binary = options.binary;
    this.#spawn = options.spawn ?? nodeSpawn;
    this.#env = options.env;
    this.#onCall = options.onCall;
  }

  /** The kubectl this client runs, as configured: what a printed command for the operator should name. */
  get binary(): string {
    return this.#binary;
  }

  /** Runs a call that talks to the API server, collecting stdout. Rejects only when kubectl cannot be spawned. */
  async run(args: readonly string[], options: KubectlCallOptions = {}): Promise<KubectlOutput> {
    const process = this.stream(args, { stdin: options.stdin !== undefined, signal: options.signal });
    if (process.stdin) {
      process.stdin.on("error", () => {}); // kubectl may exit before reading all of it; its exit says why
      process.stdin.end(options.stdin);
    }
    let timedOut = false;
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            process.kill();
          }, options.timeoutMs);
    const chunks: Buffer[] = [];
    process.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
    try {
      const exit = await process.exited;
      return { ...exit, stdout: Buffer.concat(chunks).toString("utf8"), ...(timedOut ? { timedOut } : {}) };
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Runs a call synchronously, blocking the whole process, for the last-resort clean-up of a runner that is
   * crashing (an uncaught exception: the event loop can no longer be trusted). It uses node's spawnSync, not the
   * injected spawn function. Never throws: a kubectl that cannot run or outlives `timeoutMs` is reported in the exit.
   */
  runSync(args: readonly string[], timeoutMs: number): KubectlOutput {
    const child = spawnSync(this.#binary, args, {
      env: this.#env,
      timeout: timeoutMs,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      maxBuffer: MAX_SYNC_STDOUT,
    });
    const stderr = child.error ? `${child.error.message}\n` : (child.stderr ?? "");
    return {
      exitCode: child.error ? -1 : (child.status ?? -1),
      signal: child.signal,
      stderr: stderr.slice(-MAX_STDERR),
      stdout: child.stdout ?? "",
    };
  }

  /** Starts a streaming call (exec). The caller must consume `stdout`. */
  stream(args: readonly string[], options: StreamOptions = {}): KubectlProcess {
    this.#onCall?.(args);
    const child = this.#spawn(this.#binary, args, {
      env: this.#env,
      // Its own process group, so that a kill reaches what it started too: a `--kubectl` wrapper script that runs
      // kubectl without exec would otherwise die alone and leave kubectl holding the pipes open (a cancel watch then
      // kept the run's teardown waiting until the watch timed out, minutes later).
      detached: true,
      stdio: [options.stdinFrom ?? (options.stdin ? "pipe" : "ignore"), options.stdout?.childEnd ?? "pipe", "pipe"],
    });
    options.stdout?.closeChildEnd();
    let stderr = "";
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (text: string) => {
      stderr = (stderr + text).slice(-MAX_STDERR);
      options.onStderr?.(text);
    });
    const kill = (): void => terminate(child);
    const onAbort = (): void => kill();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    if (options.signal?.aborted) kill();
    const exited = new Promise<KubectlExit>((resolve, reject) => {
      child.once("error", (error: NodeJS.ErrnoException) => {
        options.signal?.removeEventListener("abort", onAbort);
        if (error.code === "ENOENT" || error.code === "EACCES") {
          reject(
            new InfraError(
              "kubectl-missing",
              `cannot run kubectl at "${this.#binary}": ${error.code}; set --kubectl or KNOTLESS_KUBECTL`,
            ),
          );
        } else reject(error);
      });
      child.once("close", (code, signal) => {
        options.signal?.removeEventListener("abort", onAbort);
        resolve({ exitCode: code ?? -1, signal, stderr });
      });
    });
    return { stdout: options.stdout?.readable ?? child.stdout!, stdin: child.stdin ?? null, exited, kill };
  }
}

/**
 * SIGTERM to kubectl's process group, then SIGKILL to what is left of it after a grace. The group is killed even when
 * kubectl itself has exited, as long as its pipes are open: something it started still holds them.
 */
function terminate(child: ChildProcess): void {
  const closed = (child.stdout?.closed ?? true) && (child.stderr?.closed ?? true);
  if ((child.exitCode !== null || child.signalCode !== null) && closed) return;
  signalGroup(child, "SIGTERM");
  const timer = setTimeout(() => signalGroup(child, "SIGKILL"), KILL_GRACE_MS);
  timer.unref();
  child.once("close", () => clearTimeout(timer));
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid !== undefined) {
    try {
      process.kill(-child.pid, signal);
      return;
    } catch {
      // No such group (an injected spawn, or every member gone): signal the child alone.
    }
  }
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
}
