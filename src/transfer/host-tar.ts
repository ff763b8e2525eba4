// The one module that spawns the host's tar: GNU tar packs the upload when the host has it.
//
// Why: any node process in the upload's byte path costs what the 0.9x-of-plain-tar target allows and more (a node
// relay that does nothing but move tar's bytes into kubectl already did, bench/RESULTS.md). GNU tar packs from the
// list the tree scan made (src/transfer/scan-tree.ts) and writes straight into kubectl's stdin; node only feeds
// it the names. Without GNU tar the runner's own packer (src/transfer/pack-tree.ts) does the same job.
import { spawn } from "node:child_process";
import type { Readable } from "node:stream";

/** Which tar to try and the environment it runs with, both resolved at the CLI edge (KNOTLESS_TAR). */
export interface HostTarSetting {
  readonly binary: string;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** A host tar that can pack the upload: GNU tar 1.29 or later (`--verbatim-files-from`). */
export interface HostTar extends HostTarSetting {
  readonly version: string;
}

/** How the host tar ended. */
export interface HostTarExit {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Its stderr, bounded to the last 16 KiB. */
  readonly stderr: string;
}

export interface HostTarProcess {
  /** The archive: hand it to kubectl as its stdin (the bytes never enter node). */
  readonly stdout: Readable;
  readonly exited: Promise<HostTarExit>;
  /** Kills tar if it still runs; true when it did. */
  kill(): boolean;
}

const MAX_STDERR = 16 * 1024;
const PROBE_TIMEOUT_MS = 5000;
const MIN_VERSION = [1, 29] as const;

const probes = new Map<string, Promise<HostTar | undefined>>();

/**
 * Whether the setting's tar is a GNU tar recent enough to pack the upload; undefined when it is not, cannot run, or
 * does not answer `--version` within 5 s. The answer is kept for the process (a daemon runs many runs), per binary
 * and PATH.
 */
export function probeHostTar(setting: HostTarSetting): Promise<HostTar | undefined> {
  const key = `${setting.binary}\0${setting.env.PATH ?? ""}`;
  let probe = probes.get(key);
  if (probe === undefined) {
    probe = runVersion(setting).then((text) => {
      const version = parseGnuTarVersion(text);
      return version === undefined ? undefined : { ...setting, version };
    });
    probes.set(key, probe);
  }
  return probe;
}

/** The GNU tar version in `tar --version`'s first line, when it is at least 1.29. */
export function parseGnuTarVersion(versionText: string): string | undefined {
  const match = /^tar \(GNU tar\) (\d+)\.(\d+)/.exec(versionText);
  if (!match) return undefined;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  const recent = major > MIN_VERSION[0] || (major === MIN_VERSION[0] && minor >= MIN_VERSION[1]);
  return recent ? `${major}.${minor}` : undefined;
}

/** tar's environment: the setting's, with messages in English, which stoppedByReader and parseTotalBytes read. */
function tarEnv(setting: HostTarSetting): Record<string, string | undefined> {
  return { ...setting.env, LC_ALL: "C" };
}

function runVersion(setting: HostTarSetting): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    const child = spawn(setting.binary, ["--version"], { stdio: ["ignore", "pipe", "ignore"], env: tarEnv(setting) });
    // Our own timer, not spawn's `timeout`: node leaves that one running when the binary does not exist (ENOENT),
    // which kept a process that had nothing else to do alive for the whole timeout.
    const timer = setTimeout(() => child.kill("SIGTERM"), PROBE_TIMEOUT_MS);
    const end = (answer: string): void => (clearTimeout(timer), resolve(answer));
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (text = (text + chunk).slice(0, 4096)));
    child.once("error", () => end(""));
    child.once("close", (code) => end(code === 0 ? text : ""));
  });
}

/**
 * The argv after the binary: a GNU-format archive (what `tar -c` writes by default; pod tars from busybox to GNU read
 * it) of exactly the NUL-separated names on stdin, relative to `layoutDir`, without recursing into directories.
 * Names are taken verbatim (no option or escape parsing), owners become 0:0 without names, hard links are stored as
 * separate files like the packer does, and `--totals` reports the archive's size on stderr.
 *
 * Records are 64 KiB (`--blocking-factor=128`) instead of tar's 10 KiB: tar writes into a socket (what node's
 * spawn makes of a child's stdio), and six times fewer, larger writes took the 1 GiB upload through the fake
 * kubectl from ~4.2 s to ~3.3-3.5 s, against ~3.7-3.8 s for plain tar into a pipe (bench/RESULTS.md). Any tar reads them:
 * a reader takes the stream as it comes, and the last record's zero padding ends within 64 KiB.
 */
export function buildHostTarArgs(layoutDir: string): string[] {
  return [
    "--create",
    "--file=-",
    "--format=gnu",
    "--no-recursion",
    "--null",
    "--verbatim-files-from",
    "--no-unquote",
    "--hard-dereference",
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    "--totals",
    "--blocking-factor=128",
    `--directory=${layoutDir}`,
    "--files-from=-",
  ];
}

/**
 * Starts the host tar packing `names` (NUL-terminated archive names, in archive order) from `layoutDir`. The caller
 * passes `stdout` to kubectl as its stdin and then destroys its own handle. Its stdin is written here.
 */
export function spawnHostTar(tar: HostTar, layoutDir: string, names: readonly Buffer[]): HostTarProcess {
  const child = spawn(tar.binary, buildHostTarArgs(layoutDir), { stdio: ["pipe", "pipe", "pipe"], env: tarEnv(tar) });
  child.stdin.on("error", () => {}); // tar exiting early reports itself through its exit
  for (const list of names) child.stdin.write(list);
  child.stdin.end();
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr = (stderr + text).slice(-MAX_STDERR)));
  const exited = new Promise<HostTarExit>((resolve) => {
    child.once("error", (error) =>
      resolve({ exitCode: null, signal: null, stderr: `cannot run ${tar.binary}: ${error.message}` }),
    );
    child.once("close", (exitCode, signal) => resolve({ exitCode, signal, stderr }));
  });
  return {
    stdout: child.stdout,
    exited,
    kill: () => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL"),
  };
}

/** The archive size GNU tar's `--totals` printed ("Total bytes written: N (...)"), or undefined. */
export function parseTotalBytes(stderr: string): number | undefined {
  const match = /^Total bytes written: (\d+)/m.exec(stderr);
  return match ? Number(match[1]) : undefined;
}

/**
 * Whether tar stopped because whoever read the archive went away: SIGPIPE, or, when that signal is ignored or
 * blocked, or the reader closed with bytes unread (a socket then answers ECONNRESET), a write error saying so.
 */
export function stoppedByReader(exit: HostTarExit): boolean {
  return exit.signal === "SIGPIPE" || /Cannot write: (Broken pipe|Connection reset by peer)/.test(exit.stderr);
}

/** tar's stderr without the --totals line, for messages. */
export function tarComplaints(stderr: string): string {
  return stderr
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.startsWith("Total bytes written:"))
    .join("; ");
}
