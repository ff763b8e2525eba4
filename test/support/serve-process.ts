// `serve` started as its own process (the built CLI), resolved once it says where it listens; its output kept for asserts.
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "./run-cli.js";

const CLI = join(REPO_ROOT, "bin", "knotless-runner-k8s.js");

export interface ServeProcess {
  readonly child: ChildProcess;
  readonly url: string;
  /** stdout and stderr so far, interleaved. */
  readonly output: () => string;
  /** The exit code (null after a signal) and the time (epoch ms) the process ended. */
  readonly exited: Promise<{ readonly code: number | null; readonly endedAt: number }>;
}

/** Writes a token file `serve --token-file` accepts (16+ characters, mode 0600) into `dir`; returns its path. */
export function writeServeToken(dir: string, token: string): string {
  const file = join(dir, "token");
  writeFileSync(file, `${token}\n`);
  chmodSync(file, 0o600);
  return file;
}

/** Where a serve on a local cluster keeps and finds things: its state, token, kubeconfig, kubectl, checkouts, cache. */
export interface LocalServeSetup {
  readonly dir: string;
  readonly stateDir: string;
  readonly tokenFile: string;
  readonly kubeconfig: string;
  readonly kubectl: string;
}

/** `serve`'s arguments for a local cluster's e2e: an ephemeral port, no warm capacity, checkouts under `dir`. */
export function buildLocalServeArgs(setup: LocalServeSetup, extra: readonly string[] = []): string[] {
  return [
    "--listen",
    "127.0.0.1:0",
    "--state-dir",
    setup.stateDir,
    "--token-file",
    setup.tokenFile,
    "--kubeconfig",
    setup.kubeconfig,
    "--kubectl",
    setup.kubectl,
    "--skip-warm",
    "--checkout-root",
    setup.dir,
    "--cache-dir",
    join(setup.dir, "cache"),
    ...extra,
  ];
}

/** Spawns `serve ...args` (with `nodeArgs`, such as `--import`, before the CLI); rejects if it exits before saying `listening on URL`. */
export function startServeProcess(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
  nodeArgs: readonly string[] = [],
): Promise<ServeProcess> {
  const child = spawn(process.execPath, [...nodeArgs, CLI, "serve", ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const exited = new Promise<{ code: number | null; endedAt: number }>((resolve) =>
    child.on("close", (code) => resolve({ code, endedAt: Date.now() })),
  );
  return new Promise((resolve, reject) => {
    child.stdout!.setEncoding("utf8").on("data", (text: string) => {
      output += text;
      const match = /listening on (\S+)/.exec(output);
      if (match) resolve({ child, url: match[1]!, output: () => output, exited });
    });
    child.stderr!.setEncoding("utf8").on("data", (text: string) => (output += text));
    void exited.then(({ code }) => reject(new Error(`serve exited ${code} before listening: ${output}`)));
  });
}
