// Spawns one of scripts/*.sh with exactly the environment a test gives, and finds secrets in what it left behind.
import { spawn } from "node:child_process";
import { lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "./run-cli.js";

export interface ScriptRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface ScriptOptions {
  /** The whole environment of the script (nothing of the test's own is inherited). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd?: string;
  readonly timeoutMs?: number;
  /** Sends `signal` to the script once its stdout + stderr match `when`. */
  readonly signalWhen?: { readonly when: RegExp; readonly signal: NodeJS.Signals };
}

/** Runs `/bin/sh scripts/<name> args...` (absolute /bin/sh, so a PATH without tools still starts it). */
export function runScript(name: string, args: readonly string[], options: ScriptOptions): Promise<ScriptRun> {
  return new Promise((resolve, reject) => {
    const child = spawn("/bin/sh", [join(REPO_ROOT, "scripts", name), ...args], {
      env: options.env,
      cwd: options.cwd ?? REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let signalled = false;
    const check = (): void => {
      if (!signalled && options.signalWhen?.when.test(stdout + stderr)) {
        signalled = true;
        child.kill(options.signalWhen.signal);
      }
    };
    child.stdout.setEncoding("utf8").on("data", (text: string) => ((stdout += text), check()));
    child.stderr.setEncoding("utf8").on("data", (text: string) => ((stderr += text), check()));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 60_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Every regular file under `root` (links not followed), absolute paths. */
export function listFiles(root: string): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) files.push(path);
    }
  };
  walk(root);
  return files;
}

/**
 * Where any of `secrets` occurs: in stdout, stderr, or a file under `roots` other than those in `allowed`
 * (a secret -> the files it may be in). Returns "where: which secret" lines, empty when there is no leak.
 */
export function findSecretLeaks(
  run: ScriptRun,
  roots: readonly string[],
  secrets: Readonly<Record<string, string>>,
  allowed: Readonly<Record<string, readonly string[]>> = {},
): string[] {
  const leaks: string[] = [];
  for (const [label, secret] of Object.entries(secrets)) {
    if (run.stdout.includes(secret)) leaks.push(`stdout: ${label}`);
    if (run.stderr.includes(secret)) leaks.push(`stderr: ${label}`);
    for (const root of roots) {
      for (const file of listFiles(root)) {
        if ((allowed[label] ?? []).includes(file)) continue;
        if (readFileSync(file).includes(secret)) leaks.push(`${file}: ${label}`);
      }
    }
  }
  return leaks;
}

/** A directory of links to every command in /usr/bin and /bin except `without`: a machine that lacks them. */
export function makePathWithout(dir: string, without: readonly string[]): string {
  mkdirSync(dir, { recursive: true });
  for (const from of ["/usr/bin", "/bin"]) {
    for (const name of readdirSync(from)) {
      if (without.includes(name)) continue;
      try {
        lstatSync(join(dir, name));
      } catch {
        symlinkSync(join(from, name), join(dir, name));
      }
    }
  }
  return dir;
}

/** The permission bits of a file, as "0600". */
export function modeOf(path: string): string {
  return (lstatSync(path).mode & 0o777).toString(8).padStart(4, "0");
}
