// An in-memory kubectl for unit tests: replies scripted per call by its arguments, every call recorded.
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { EventEmitter, once } from "node:events";
import { PassThrough, Writable, type Readable } from "node:stream";
import type { ClusterTarget } from "../../src/cluster/cluster.js";
import { KubectlCluster } from "../../src/cluster/kubectl/kubectl-cluster.js";
import { Kubectl, type SpawnFunction } from "../../src/cluster/kubectl/kubectl.js";

/** What one scripted kubectl process does. */
export interface ScriptedReply {
  /** Written to stdout; an array is written chunk by chunk, one chunk per turn of the event loop. */
  readonly stdout?: string | Buffer | ReadonlyArray<string | Buffer>;
  readonly stderr?: string;
  /** Defaults to 0. */
  readonly exitCode?: number;
  /** Ends by this signal instead of an exit code. */
  readonly signal?: NodeJS.Signals;
  /** Writes its output, then never exits on its own: only `kill()` ends it. */
  readonly hang?: boolean;
  /** Cannot be spawned: emits `error` with this errno code (ENOENT, EACCES) and never runs. */
  readonly spawnError?: string;
}

/** A reply, or a function of the call building one (`n` counts the calls this rule answered, from 1). */
export type Responder = ScriptedReply | ((call: RecordedCall, n: number) => ScriptedReply | Promise<ScriptedReply>);

/** One spawned kubectl, as the test sees it after the action. */
export interface RecordedCall {
  readonly binary: string;
  readonly args: readonly string[];
  /** The arguments after the global flags (--kubeconfig, --context, --namespace): `["get", "pods", ...]`. */
  readonly command: readonly string[];
  /** Everything written to stdin (as UTF-8 text), or undefined when the call had no stdin. */
  stdin: string | undefined;
  /** The same bytes, undecoded (an archive handed over as a descriptor, say). */
  stdinBytes: Buffer | undefined;
  /** The signals `kill()` sent, in order. */
  readonly killSignals: NodeJS.Signals[];
  /** How the process ended; undefined while it runs. */
  ended: { readonly code: number | null; readonly signal: NodeJS.Signals | null } | undefined;
  /** False when no rule matched (the call then failed with exit 1). */
  matched: boolean;
}

interface Rule {
  readonly words: readonly string[];
  readonly where: ((call: RecordedCall) => boolean) | undefined;
  readonly replies: readonly Responder[];
  answered: number;
}

const GLOBAL_FLAGS_WITH_VALUE = new Set(["--kubeconfig", "--context", "--namespace", "-n"]);

/** The arguments after kubectl's leading global flags. */
export function stripGlobalFlags(args: readonly string[]): readonly string[] {
  let at = 0;
  while (at < args.length && GLOBAL_FLAGS_WITH_VALUE.has(args[at]!)) at += 2;
  return args.slice(at);
}

/** Scripts and records kubectl calls; hand `kubectl` (or `spawn`) to the code under test. */
export class ScriptedKubectl {
  readonly calls: RecordedCall[] = [];
  readonly #rules: Rule[] = [];
  readonly spawn: SpawnFunction = (binary, args, options) => this.#spawn(binary, args, options);
  readonly kubectl: Kubectl;

  constructor(options: { binary?: string } = {}) {
    this.kubectl = new Kubectl({ binary: options.binary ?? "kubectl", spawn: this.spawn });
  }

  /** The kubectl transport over this kubectl, pointed at `target`'s kubeconfig and context (each call names its namespace). */
  cluster(target: ClusterTarget = {}): KubectlCluster {
    return new KubectlCluster(this.kubectl, target);
  }

  /**
   * Answers calls whose command starts with the words of `command` (`"get pods"`, `"exec"`) and satisfy `where`.
   * Several replies are used in order, the last one for every later call. The first rule that matches wins.
   */
  on(command: string, replies: Responder | readonly Responder[], where?: (call: RecordedCall) => boolean): this {
    const list = Array.isArray(replies) ? (replies as readonly Responder[]) : [replies as Responder];
    if (list.length === 0) throw new Error("scripted kubectl: a rule needs at least one reply");
    this.#rules.push({ words: command.split(" ").filter(Boolean), where, replies: list, answered: 0 });
    return this;
  }

  /** The recorded calls whose command starts with the words of `command`. */
  callsTo(command: string): RecordedCall[] {
    const words = command.split(" ").filter(Boolean);
    return this.calls.filter((call) => startsWith(call.command, words));
  }

  #spawn(binary: string, args: readonly string[], options: SpawnOptions): ChildProcess {
    const stdio = Array.isArray(options.stdio) ? options.stdio : [];
    const call: RecordedCall = {
      binary,
      args: [...args],
      command: stripGlobalFlags(args),
      stdin: undefined,
      stdinBytes: undefined,
      killSignals: [],
      ended: undefined,
      matched: false,
    };
    this.calls.push(call);
    const rule = this.#rules.find((r) => startsWith(call.command, r.words) && (r.where?.(call) ?? true));
    call.matched = rule !== undefined;
    let responder: Responder;
    if (rule) {
      rule.answered += 1;
      responder = rule.replies[Math.min(rule.answered, rule.replies.length) - 1]!;
    } else {
      responder = { exitCode: 1, stderr: `error: no reply scripted for: kubectl ${args.join(" ")}\n` };
    }
    const n = rule?.answered ?? 0;
    const stdin = stdio[0] === "pipe" ? "pipe" : isReadable(stdio[0]) ? stdio[0] : undefined;
    const child = new FakeChild(call, stdin, holdsStdin(call.command));
    void child.play(() => (typeof responder === "function" ? responder(call, n) : responder));
    return child as unknown as ChildProcess;
  }
}

/** A step's follow (`helper.sh run|follow`) holds its stdin open for its whole life and writes nothing: it is answered at once. */
function holdsStdin(command: readonly string[]): boolean {
  const helper = command.indexOf("/knotless/helper.sh");
  return command[0] === "exec" && helper >= 0 && (command[helper + 1] === "run" || command[helper + 1] === "follow");
}

function startsWith(command: readonly string[], words: readonly string[]): boolean {
  return words.every((word, i) => command[i] === word);
}

/** The part of ChildProcess that Kubectl uses: stdio streams, kill, exit state and `close`/`error` events. */
class FakeChild extends EventEmitter {
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  readonly stdin: Writable | null;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  readonly #call: RecordedCall;
  readonly #stdinDone: Promise<void>;
  #ending = false;
  #onEnding: () => void = () => {};
  readonly #endingSeen = new Promise<void>((resolve) => (this.#onEnding = resolve));

  /**
   * `stdin`: "pipe" gives the caller a stdin to write; a Readable stands for a descriptor handed to kubectl (another
   * child's stdout): a real `cat` reads it, as kubectl would, since the caller may destroy its own handle at once.
   */
  constructor(call: RecordedCall, stdin: "pipe" | Readable | undefined, answersBeforeStdinEnds = false) {
    super();
    this.#call = call;
    const chunks: Buffer[] = [];
    const record = (chunk: Buffer): void => {
      chunks.push(Buffer.from(chunk));
      call.stdinBytes = Buffer.concat(chunks);
      call.stdin = call.stdinBytes.toString("utf8");
    };
    if (stdin === "pipe") {
      call.stdin = "";
      this.stdin = new Writable({
        write(chunk: Buffer, _encoding, callback) {
          record(chunk);
          callback();
        },
      });
      this.#stdinDone = answersBeforeStdinEnds ? Promise.resolve() : once(this.stdin, "finish").then(() => undefined);
    } else if (stdin !== undefined) {
      call.stdin = "";
      this.stdin = null;
      const reader = spawn("cat", [], { stdio: [stdin, "pipe", "ignore"] });
      reader.stdout.on("data", record);
      this.#stdinDone = once(reader, "close").then(() => undefined);
    } else {
      this.stdin = null;
      this.#stdinDone = Promise.resolve();
    }
  }

  get killed(): boolean {
    return this.#call.killSignals.length > 0;
  }

  /** Sends a signal: the fake process ends by it at once unless it has already ended. */
  kill(signal: NodeJS.Signals = "SIGTERM"): boolean {
    this.#call.killSignals.push(signal);
    void this.#end(null, signal);
    return true;
  }

  /** Waits for stdin (a kubectl that reads its input before answering), then plays the reply. */
  async play(reply: () => ScriptedReply | Promise<ScriptedReply>): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve)); // the caller attaches its listeners first, as with a real spawn
    await Promise.race([this.#stdinDone, this.#endingSeen]);
    if (this.#ending) return;
    const scripted = await reply();
    if (this.#ending) return;
    if (scripted.spawnError) {
      this.#ending = true;
      this.emit(
        "error",
        Object.assign(new Error(`spawn kubectl ${scripted.spawnError}`), { code: scripted.spawnError }),
      );
      return;
    }
    if (scripted.stderr) this.stderr.write(scripted.stderr);
    const chunks =
      scripted.stdout === undefined
        ? []
        : typeof scripted.stdout === "string" || Buffer.isBuffer(scripted.stdout)
          ? [scripted.stdout]
          : scripted.stdout;
    for (const chunk of chunks) {
      if (this.#ending) return;
      this.stdout.write(chunk);
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (scripted.hang || this.#ending) return;
    await this.#end(scripted.signal ? null : (scripted.exitCode ?? 0), scripted.signal ?? null);
  }

  /** Closes stdout and stderr, waits until they are read to their end, then reports the exit like node does. */
  async #end(code: number | null, signal: NodeJS.Signals | null): Promise<void> {
    if (this.#ending) return;
    this.#ending = true;
    this.#onEnding();
    const ended = [this.stdout, this.stderr].map((stream) => drained(stream));
    this.stdout.end();
    this.stderr.end();
    await Promise.all(ended);
    this.exitCode = code;
    this.signalCode = signal;
    this.#call.ended = { code, signal };
    this.emit("exit", code, signal);
    this.emit("close", code, signal);
  }
}

function isReadable(value: unknown): value is Readable {
  return typeof value === "object" && value !== null && typeof (value as Readable).pipe === "function";
}

/** Resolves once the stream ended; a stream nobody reads is drained so the process can still close. */
function drained(stream: Readable): Promise<void> {
  const ended = once(stream, "end").then(() => undefined);
  if (stream.readableFlowing === null) stream.resume();
  return ended;
}
