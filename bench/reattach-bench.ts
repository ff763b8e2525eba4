// The re-attach benchmark on the local cluster: `serve` killed with SIGKILL mid-step and started again on the same state directory; from the restart to a re-attached run's first relayed line, and with N runs in flight, until all are re-attached.
// Run: npm run build && node dist/bench/reattach-bench.js [--reps 3] [--runs 20] [--step-seconds 120]   (prints markdown; needs podman)
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { startLocalCluster } from "../local-cluster/index.js";
import { findDefaultKubectl } from "./local-cluster-env.js";
import { describeMachine } from "./machine.js";

const CLI = join(import.meta.dirname, "..", "..", "bin", "knotless-runner-k8s.js");
const TOKEN = "bench-reattach-token-16+";
const REATTACHED = /re-attached to pod/;

interface Serve {
  readonly child: ChildProcess;
  readonly url: string;
  readonly exited: Promise<number | null>;
  /** Epoch ms of the spawn and of "listening on". */
  readonly spawnedAt: number;
  readonly listeningAt: number;
}

/** What a /logs follower of one run saw after the restart, in epoch ms of this process's clock. */
interface Followed {
  /** The re-attach line's arrival, and its own `time` (when serve wrote it). */
  reattachAt: number | undefined;
  reattachWrittenAt: number | undefined;
  /** The first step output line after the re-attach line: its arrival. */
  firstLineAt: number | undefined;
  /** Step output lines ("line K") the follower got more than once. */
  duplicates: number;
  readonly closed: Promise<void>;
}

function startServe(args: readonly string[]): Promise<Serve> {
  const spawnedAt = Date.now();
  const child = spawn(process.execPath, [CLI, "serve", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  let output = "";
  child.stderr!.setEncoding("utf8").on("data", (text: string) => (output += text));
  return new Promise((resolve, reject) => {
    child.stdout!.setEncoding("utf8").on("data", (text: string) => {
      output += text;
      const match = /listening on (\S+)/.exec(output);
      if (match) resolve({ child, url: match[1]!, exited, spawnedAt, listeningAt: Date.now() });
    });
    void exited.then((code) => reject(new Error(`serve exited ${code} before listening: ${output}`)));
  });
}

async function call(serve: Serve, method: string, what: { params?: string; body?: unknown }): Promise<any> {
  const res = await fetch(`${serve.url}/xrpc/dev.knotless.runner.${method}${what.params ? `?${what.params}` : ""}`, {
    method: what.body === undefined ? "GET" : "POST",
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
    ...(what.body === undefined ? {} : { body: JSON.stringify(what.body) }),
  });
  const body = (await res.json()) as unknown;
  if (res.status !== 200) throw new Error(`${method}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** Follows run `runId`'s /logs from byte 0 until it closes, noting when the re-attach line and the next step line arrive. */
function follow(serve: Serve, runId: string): Followed {
  const seen = new Set<string>();
  const followed: Followed = {
    reattachAt: undefined,
    reattachWrittenAt: undefined,
    firstLineAt: undefined,
    duplicates: 0,
    closed: new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(`${serve.url.replace(/^http/, "ws")}/logs/${runId}`, {
        headers: { Authorization: `Bearer ${TOKEN}` },
      });
      ws.on("message", (data: Buffer) => {
        const at = Date.now();
        const line = JSON.parse(data.toString("utf8")) as {
          kind: string;
          step: number;
          content?: string;
          time: string;
        };
        if (followed.reattachAt === undefined && REATTACHED.test(line.content ?? "")) {
          followed.reattachAt = at;
          followed.reattachWrittenAt = Date.parse(line.time);
        } else if (line.kind === "data" && line.step === 0) {
          if (followed.reattachAt !== undefined) followed.firstLineAt ??= at;
          for (const text of (line.content ?? "").split("\n").filter((l) => l.startsWith("line "))) {
            if (seen.has(text)) followed.duplicates += 1;
            seen.add(text);
          }
        }
      });
      ws.on("close", () => resolve());
      ws.on("error", reject);
    }),
  };
  return followed;
}

function hasPrinted(stateDir: string, runId: string, text: string): boolean {
  try {
    return readFileSync(join(stateDir, "runs", runId, "log.ndjson"), "utf8").includes(text);
  } catch {
    return false;
  }
}

async function waitFor(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

interface Restart {
  readonly listenMs: number;
  /** Per run, from the spawn: the re-attach line written (its time), at the follower, the first relayed step line. */
  readonly runs: ReadonlyArray<{ written: number; reattached: number; firstLine: number; duplicates: number }>;
  readonly succeeded: number;
}

/**
 * Submits `runIds` (one step printing a line a second for `stepSeconds`), kills serve with SIGKILL once every run
 * printed "line 2", starts it again and follows every run to its end. Returns the new serve and the figures.
 */
async function measureRestart(
  serve: Serve,
  args: readonly string[],
  stateDir: string,
  checkout: string,
  runIds: readonly string[],
  stepSeconds: number,
): Promise<{ serve: Serve; restart: Restart }> {
  const command = `i=0; while [ $i -lt ${stepSeconds} ]; do i=$((i+1)); echo line $i; sleep 1; done`;
  const text = `steps:\n  - name: count\n    command: ${JSON.stringify(command)}\n`;
  for (const runId of runIds)
    await call(serve, "submitRun", {
      body: { workflow: { name: "ci.yml", text }, checkout: { dir: checkout }, runId },
    });
  await waitFor("every run printed line 2", () => runIds.every((id) => hasPrinted(stateDir, id, "line 2\\n")), 600_000);
  if (runIds.some((id) => hasPrinted(stateDir, id, `line ${stepSeconds}\\n`)))
    throw new Error("a run ended its step before the kill: raise --step-seconds");
  serve.child.kill("SIGKILL");
  await serve.exited;
  const restarted = await startServe(args);
  const followers = runIds.map((id) => follow(restarted, id));
  await Promise.all(followers.map((f) => f.closed));
  let succeeded = 0;
  for (const runId of runIds)
    if ((await call(restarted, "getRun", { params: `runId=${runId}` })).status === "success") succeeded += 1;
  const since = (at: number | undefined): number => (at === undefined ? NaN : at - restarted.spawnedAt);
  return {
    serve: restarted,
    restart: {
      listenMs: restarted.listeningAt - restarted.spawnedAt,
      runs: followers.map((f) => ({
        written: since(f.reattachWrittenAt),
        reattached: since(f.reattachAt),
        firstLine: since(f.firstLineAt),
        duplicates: f.duplicates,
      })),
      succeeded,
    },
  };
}

function median(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}

const seconds = (ms: number): string => (Number.isNaN(ms) ? "never" : (ms / 1000).toFixed(2));

async function main(): Promise<void> {
  const arg = (name: string, fallback: string): string => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1]! : fallback;
  };
  const reps = Number(arg("--reps", "3"));
  const many = Number(arg("--runs", "20"));
  const stepSeconds = Number(arg("--step-seconds", "120"));
  const machine = describeMachine();
  const dir = mkdtempSync(join(tmpdir(), "reattach-bench-"));
  const checkout = join(dir, "checkout");
  mkdirSync(checkout);
  writeFileSync(join(checkout, "README"), "bench\n");
  const tokenFile = join(dir, "token");
  writeFileSync(tokenFile, `${TOKEN}\n`);
  chmodSync(tokenFile, 0o600);
  const stateDir = join(dir, "state");
  const cluster = await startLocalCluster({ imageBackOffSeconds: 1 });
  const args = [
    "--listen",
    "127.0.0.1:0",
    "--state-dir",
    stateDir,
    "--token-file",
    tokenFile,
    "--kubeconfig",
    cluster.kubeconfigPath,
    "--kubectl",
    findDefaultKubectl(),
    "--skip-warm",
    "--checkout-root",
    dir,
    "--max-runs",
    String(Math.max(many, 1)),
  ];
  const singles: Restart[] = [];
  let crowd: Restart | undefined;
  const loads: string[] = [];
  let serve = await startServe(args);
  try {
    for (let i = 0; i < reps; i++) {
      loads.push(loadavg()[0]!.toFixed(1));
      const measured = await measureRestart(serve, args, stateDir, checkout, [`one-${i}`], 15);
      serve = measured.serve;
      singles.push(measured.restart);
      process.stderr.write(`one run, restart ${i + 1}/${reps}: ${JSON.stringify(measured.restart)}\n`);
    }
    if (many > 0) {
      loads.push(loadavg()[0]!.toFixed(1));
      const ids = Array.from({ length: many }, (_, i) => `many-${String(i).padStart(2, "0")}`);
      const measured = await measureRestart(serve, args, stateDir, checkout, ids, stepSeconds);
      serve = measured.serve;
      crowd = measured.restart;
      process.stderr.write(`${many} runs: ${JSON.stringify(measured.restart)}\n`);
    }
  } finally {
    serve.child.kill("SIGTERM");
    await serve.exited;
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const lines = [
    "## Re-attach after a restart on the local cluster",
    "",
    `${machine.date}, commit ${machine.commit}, ${machine.nproc} CPUs, load average (1 min) before each case: ${loads.join(", ")}; at the end ${loadavg()[0]!.toFixed(1)}.`,
    "`serve` killed with SIGKILL once every run printed its second line, started again on the same state directory; times from the new process's spawn. The re-attach line: its `time` in log.ndjson (written) and its arrival at a `/logs` WebSocket follower opened once serve listens; the first relayed line: the first step output line after it at that follower.",
    "",
    "| case | spawn → listening | → re-attach line written (median / max) | → at the follower (median / max) | → first relayed line (median / max) | runs succeeded | duplicated lines at the followers |",
    "|---|---|---|---|---|---|---|",
  ];
  const row = (name: string, restart: Restart): string => {
    const pick = (key: "written" | "reattached" | "firstLine") => restart.runs.map((run) => run[key]);
    const pair = (values: number[]) =>
      `${seconds(median(values))} / ${seconds(Math.max(...values.map((v) => (Number.isNaN(v) ? Infinity : v))))} s`;
    return `| ${name} | ${seconds(restart.listenMs)} s | ${pair(pick("written"))} | ${pair(pick("reattached"))} | ${pair(pick("firstLine"))} | ${restart.succeeded}/${restart.runs.length} | ${restart.runs.reduce((sum, run) => sum + run.duplicates, 0)} |`;
  };
  singles.forEach((restart, i) => lines.push(row(`one run, restart ${i + 1}`, restart)));
  if (crowd) lines.push(row(`${many} runs in flight`, crowd));
  process.stdout.write(`${lines.join("\n")}\n`);
}

await main();
