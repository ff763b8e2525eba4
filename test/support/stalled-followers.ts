// Followers that stop reading (NDJSON over HTTP and WebSocket) of a big-log `serve` child process, and that process's peak resident memory: for the follower test and bench.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { request, type IncomingMessage } from "node:http";
import { join } from "node:path";
import WebSocket from "ws";

export const BIG_LOG_TOKEN = "t0ken-for-follower-tests";

const CHILD = join(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "big-log-service.js");

export interface BigLogService {
  readonly child: ChildProcess;
  readonly url: string;
  /** Lets the run's first step print its log. */
  go(): void;
  /** The process's peak resident memory so far (VmHWM), in bytes. */
  peakRss(): number;
  submit(runId: string): Promise<void>;
  /** /metrics as name{labels} → value. */
  metrics(): Promise<Map<string, number>>;
  stop(): Promise<void>;
}

export async function startBigLogService(
  dir: string,
  options: { logBytes: number; stallTimeoutMs?: number; maxBufferedBytes?: number; maxTotalBufferedBytes?: number },
): Promise<BigLogService> {
  const child = spawn(process.execPath, [CHILD, dir, JSON.stringify({ ...options, token: BIG_LOG_TOKEN })], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (text: string) => {
      out += text;
      const match = /listening on (\S+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.once("exit", (code) => reject(new Error(`the service exited ${code} before listening`)));
  });
  const headers = { Authorization: `Bearer ${BIG_LOG_TOKEN}` };
  return {
    child,
    url,
    go: () => writeFileSync(join(dir, "go"), ""),
    peakRss: () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))![1]) * 1024,
    async submit(runId) {
      const workflow = "steps:\n  - name: big\n    command: print a lot\n";
      const res = await fetch(`${url}/xrpc/dev.knotless.runner.submitRun`, {
        method: "POST",
        headers: { ...headers, "Content-Type": "application/json" },
        body: JSON.stringify({
          workflow: { name: "ci.yml", text: workflow },
          checkout: { dir: join(dir, "checkout") },
          runId,
        }),
      });
      if (res.status !== 200) throw new Error(`submit: ${res.status} ${await res.text()}`);
    },
    async metrics() {
      const text = await (await fetch(`${url}/metrics`)).text();
      const samples = new Map<string, number>();
      for (const line of text.split("\n")) {
        const match = /^(\S+) (\S+)$/.exec(line);
        if (match && !line.startsWith("#")) samples.set(match[1]!, Number(match[2]));
      }
      return samples;
    },
    async stop() {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
    },
  };
}

/** A follower that reads nothing until `resume`, then everything to the end. */
export interface StalledFollower {
  /** Reads on; resolves with what came (NDJSON: the lines; WebSocket: the frames) and how it ended. */
  resume(): Promise<{ lines: string[]; code?: number; reason?: string }>;
}

/** GET path as NDJSON, paused as soon as the answer's headers are in. */
export function openStalledNdjson(url: string, path: string): Promise<StalledFollower> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      { headers: { Authorization: `Bearer ${BIG_LOG_TOKEN}`, Accept: "application/x-ndjson" } },
      (res: IncomingMessage) => {
        res.pause();
        resolve({
          resume: () =>
            new Promise((done) => {
              // Only the tail matters: the last lines say how the stream ended.
              let tail = "";
              res.setEncoding("utf8");
              res.on("data", (text: string) => (tail = (tail + text).slice(-4096)));
              const finish = (): void =>
                done({
                  lines: tail
                    .split("\n")
                    .filter((line) => line !== "")
                    .slice(-2),
                });
              res.on("end", finish);
              res.on("error", finish);
              res.on("aborted", finish);
              res.resume();
            }),
        });
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** A WebSocket on path, paused as soon as it is open. */
export function openStalledWs(url: string, path: string): Promise<StalledFollower> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace(/^http/, "ws")}${path}`, {
      headers: { Authorization: `Bearer ${BIG_LOG_TOKEN}` },
    });
    let last = "";
    const closed = new Promise<{ lines: string[]; code: number; reason: string }>((done) =>
      ws.on("close", (code: number, reason: Buffer) => done({ lines: [last], code, reason: reason.toString("utf8") })),
    );
    ws.on("message", (data: Buffer) => (last = data.toString("utf8")));
    ws.on("error", () => undefined);
    ws.once("open", () => {
      ws.pause();
      resolve({ resume: () => (ws.resume(), closed) });
    });
    ws.once("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
}
