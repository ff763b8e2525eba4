// Test helper: runs a real kubectl binary against a local cluster, with its own discovery cache, and collects the result.

import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { makeTestTempDir } from "../support/temp-dir.js";

export interface KubectlBinary {
  version: string;
  path: string;
}

const SDK = "/usr/lib/google-cloud-sdk/bin";

/** The kubectl versions the suite pins: 1.30 (first with WebSocket exec by default) and 1.33 (newest installed); else `kubectl` on PATH. */
export function listKubectlBinaries(): KubectlBinary[] {
  const pinned = [
    { version: "1.30", path: join(SDK, "kubectl.1.30") },
    { version: "1.33", path: join(SDK, "kubectl.1.33") },
  ].filter((b) => existsSync(b.path));
  return pinned.length > 0 ? pinned : [{ version: "PATH", path: "kubectl" }];
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface KubectlCallOptions {
  stdin?: string | Buffer | Readable;
  /** Consume stdout as a stream instead of collecting it. */
  onStdout?: (chunk: Buffer) => void;
  timeoutMs?: number;
}

let cacheDir: string | undefined;

export function runKubectl(
  binary: string,
  kubeconfig: string,
  args: readonly string[],
  options: KubectlCallOptions = {},
): Promise<KubectlResult> {
  cacheDir ??= makeTestTempDir("kubectl-cache-");
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ["--kubeconfig", kubeconfig, ...args], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, KUBECACHEDIR: cacheDir, KUBECONFIG: "" },
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (d: Buffer) => (options.onStdout ? options.onStdout(d) : out.push(d)));
    child.stderr.on("data", (d: Buffer) => err.push(d));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`kubectl ${args.join(" ")} timed out; stderr: ${Buffer.concat(err).toString()}`));
    }, options.timeoutMs ?? 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() });
    });
    child.stdin.on("error", () => undefined);
    const input = options.stdin;
    if (input === undefined) child.stdin.end();
    else if (typeof input === "string" || Buffer.isBuffer(input)) child.stdin.end(input);
    else input.pipe(child.stdin);
  });
}
