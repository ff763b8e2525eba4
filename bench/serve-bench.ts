// `serve` under concurrent runs on the local cluster: peak RSS of the service alone and with its children (kubectl), marginal memory per run, and submit → first step output.
// Usage: npm run build && node dist/bench/serve-bench.js [--runs 5,10] [--sleep 15] [--single N] [--transport api|kubectl] (--runs 0 for none)
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import WebSocket from "ws";
import { startLocalCluster } from "../local-cluster/index.js";
import { findDefaultKubectl } from "./local-cluster-env.js";

const execFileAsync = promisify(execFile);
const CLI = join(
  import.meta.dirname ?? new URL(".", import.meta.url).pathname,
  "..",
  "..",
  "bin",
  "knotless-runner-k8s.js",
);
const TOKEN = "bench-token-of-16+";

/** RSS (KiB) of `pid` alone and of it with every descendant, from one `ps` listing. */
async function sampleRss(pid: number): Promise<{ self: number; tree: number; children: number }> {
  const { stdout } = await execFileAsync("ps", ["-e", "-o", "pid=,ppid=,rss="]);
  const rows = stdout
    .trim()
    .split("\n")
    .map((line) => line.trim().split(/\s+/).map(Number) as [number, number, number]);
  const kids = new Map<number, number[]>();
  for (const [p, pp] of rows) kids.set(pp, [...(kids.get(pp) ?? []), p]);
  const rss = new Map(rows.map(([p, , r]) => [p, r]));
  let tree = 0;
  let children = 0;
  const walk = (p: number): void => {
    tree += rss.get(p) ?? 0;
    for (const k of kids.get(p) ?? []) {
      children += 1;
      walk(k);
    }
  };
  walk(pid);
  return { self: rss.get(pid) ?? 0, tree, children };
}

/** Starts `serve` on a free loopback port with the bench's transport; resolves once it says where it listens. */
async function startServe(
  [state, tokenFile, kubeconfig, kubectl]: readonly [string, string, string, string],
  extra: readonly string[] = [],
): Promise<{ child: ChildProcess; url: string }> {
  const args = [
    "serve",
    "--listen",
    "127.0.0.1:0",
    "--state-dir",
    state,
    "--token-file",
    tokenFile,
    "--kubeconfig",
    kubeconfig,
    "--kubectl",
    kubectl,
    "--transport",
    transport,
    "--skip-warm",
    "--checkout-root",
    dirname(state),
    ...extra,
  ];
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise<string>((resolve) => {
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (text: string) => {
      out += text;
      const match = /listening on (\S+)/.exec(out);
      if (match) resolve(match[1]!);
    });
  });
  return { child, url };
}

async function measure(
  runs: number,
  sleepSeconds: number,
  kubeconfig: string,
  kubectl: string,
  dir: string,
): Promise<string> {
  const state = join(dir, `state-${runs}`);
  const tokenFile = join(dir, "token");
  const { child, url } = await startServe([state, tokenFile, kubeconfig, kubectl], ["--max-runs", String(runs)]);
  const idle = await sampleRss(child.pid!);
  let peak = { self: idle.self, tree: idle.tree, children: 0 };
  const sampler = setInterval(() => {
    void sampleRss(child.pid!).then(
      (s) =>
        (peak = {
          self: Math.max(peak.self, s.self),
          tree: Math.max(peak.tree, s.tree),
          children: Math.max(peak.children, s.children),
        }),
    );
  }, 250);
  const headers = { Authorization: `Bearer ${TOKEN}` };
  const text = `steps:\n  - name: main\n    command: "echo started; sleep ${sleepSeconds}; echo done"\n`;
  const checkout = join(dir, "checkout");
  const firstOutput: number[] = [];
  const started = Date.now();
  await Promise.all(
    Array.from({ length: runs }, async (_, i) => {
      const runId = `bench-${runs}-${i}`;
      const submitted = Date.now();
      const res = await fetch(`${url}/xrpc/dev.knotless.runner.submitRun`, {
        method: "POST",
        headers: { ...headers, "Content-Type": "application/json" },
        body: JSON.stringify({ workflow: { name: "ci.yml", text }, checkout: { dir: checkout }, runId }),
      });
      if (res.status !== 200) throw new Error(`submit ${runId}: ${res.status} ${await res.text()}`);
      await new Promise<void>((resolve, reject) => {
        const ws = new WebSocket(`${url.replace(/^http/, "ws")}/logs/${runId}`, { headers });
        ws.on("message", (data: Buffer) => {
          const line = JSON.parse(data.toString("utf8")) as { kind: string; step: number; content?: string };
          if (line.kind === "data" && line.step === 0 && firstOutput.length < runs && line.content === "started\n")
            firstOutput.push(Date.now() - submitted);
        });
        ws.on("close", () => resolve());
        ws.on("error", reject);
      });
      const run = (await (
        await fetch(`${url}/xrpc/dev.knotless.runner.getRun?runId=${runId}`, { headers })
      ).json()) as { status: string };
      if (run.status !== "success") throw new Error(`${runId} ended ${run.status}`);
    }),
  );
  const wall = Date.now() - started;
  clearInterval(sampler);
  child.kill("SIGTERM");
  await new Promise((resolve) => child.on("close", resolve));
  firstOutput.sort((a, b) => a - b);
  const mib = (kib: number): string => `${(kib / 1024).toFixed(1)} MiB`;
  return `| ${runs} | ${mib(idle.self)} | ${mib(peak.self)} | ${mib(peak.tree)} (${peak.children} children) | ${(firstOutput[Math.floor(runs / 2)]! / 1000).toFixed(1)} s / ${(firstOutput.at(-1)! / 1000).toFixed(1)} s | ${(wall / 1000).toFixed(1)} s |`;
}

/** One run through a serve process already up (submit → result) against the same workflow through `run` (spawn → exit), alternating, `times` each: medians in ms. */
async function measureSingle(times: number, kubeconfig: string, kubectl: string, dir: string): Promise<string> {
  const state = join(dir, "state-single");
  const { child, url } = await startServe([state, join(dir, "token"), kubeconfig, kubectl]);
  const headers = { Authorization: `Bearer ${TOKEN}` };
  const text = `steps:\n  - name: main\n    command: "echo hello"\n`;
  const workflowFile = join(dir, "ci.yml");
  writeFileSync(workflowFile, text);
  const viaServe: number[] = [];
  const viaRun: number[] = [];
  for (let i = 0; i < times; i++) {
    let started = Date.now();
    const runId = `single-${i}`;
    await fetch(`${url}/xrpc/dev.knotless.runner.submitRun`, {
      method: "POST",
      headers: { ...headers, "Content-Type": "application/json" },
      body: JSON.stringify({ workflow: { name: "ci.yml", text }, checkout: { dir: join(dir, "checkout") }, runId }),
    });
    await new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(`${url.replace(/^http/, "ws")}/logs/${runId}`, { headers });
      ws.on("close", () => resolve());
      ws.on("error", reject);
      ws.on("message", () => undefined);
    });
    viaServe.push(Date.now() - started);
    started = Date.now();
    const out = join(dir, `out-${i}`);
    await execFileAsync(process.execPath, [
      CLI,
      "run",
      "--workflow",
      workflowFile,
      "--checkout",
      join(dir, "checkout"),
      "--out",
      out,
      "--kubeconfig",
      kubeconfig,
      "--kubectl",
      kubectl,
      "--transport",
      transport,
      "--skip-warm",
    ]);
    viaRun.push(Date.now() - started);
  }
  child.kill("SIGTERM");
  await new Promise((resolve) => child.on("close", resolve));
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return `one run, median of ${times}: through serve (submit → log closed) ${(median(viaServe) / 1000).toFixed(2)} s [${viaServe.map((x) => (x / 1000).toFixed(2)).join(", ")}]; \`run\` (spawn → exit) ${(median(viaRun) / 1000).toFixed(2)} s [${viaRun.map((x) => (x / 1000).toFixed(2)).join(", ")}]; ratio ${(median(viaServe) / median(viaRun)).toFixed(3)}x`;
}

/** serve's transport for every measurement (`--transport`; serve's own default, api). */
let transport = "api";

async function main(): Promise<void> {
  const arg = (name: string, fallback: string): string => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1]! : fallback;
  };
  const counts = arg("--runs", "5,10").split(",").map(Number);
  transport = arg("--transport", "api");
  const sleepSeconds = Number(arg("--sleep", "15"));
  const dir = mkdtempSync(join(tmpdir(), "serve-bench-"));
  mkdirSync(join(dir, "checkout"));
  writeFileSync(join(dir, "checkout", "README"), "bench\n");
  writeFileSync(join(dir, "token"), TOKEN);
  chmodSync(join(dir, "token"), 0o600);
  const cluster = await startLocalCluster({});
  const rows: string[] = [];
  const single = Number(arg("--single", "0"));
  let singleLine = "";
  try {
    if (single > 0) singleLine = await measureSingle(single, cluster.kubeconfigPath, findDefaultKubectl(), dir);
    for (const runs of counts.filter((n) => n > 0))
      rows.push(await measure(runs, sleepSeconds, cluster.kubeconfigPath, findDefaultKubectl(), dir));
  } finally {
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(
    `load average at the end: ${loadavg()[0]!.toFixed(1)}\n${singleLine}\n\n| runs at once | service RSS idle | service peak RSS | peak RSS with children | submit → first output, median / max | wall |\n| --- | --- | --- | --- | --- | --- |\n${rows.join("\n")}\n`,
  );
}

await main();
