// The example run through --transport kubectl and --transport api, side by side, with the API server made 50 ms away.
//
// Usage: node dist/bench/api-transport-bench.js [--rtt 50] [--reps 3] [--kubectl PATH]
// Starts the local cluster (TLS, podman pods) in this process, a latency proxy in front of it, and runs the CLI on the
// repository's example (examples/hello) alternately through each transport; samples the RSS of the runner and every
// descendant (kubectl, tar) every 25 ms and reports the peak of their sum.
import { spawn } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { startLocalCluster } from "../local-cluster/index.js";
import { findDefaultKubectl } from "./local-cluster-env.js";
import { startLatencyProxy } from "./latency-proxy.js";
import { sampleTree } from "./process-tree.js";
import { REPO_ROOT, RUNNER_BIN } from "./runner-cli.js";

interface Sample {
  readonly wallMs: number;
  readonly peakTreeMiB: number;
  readonly peakRunnerMiB: number;
  readonly children: ReadonlyMap<string, number>;
  readonly code: number | null;
}

async function runOnce(args: readonly string[]): Promise<Sample> {
  const started = performance.now();
  const child = spawn(process.execPath, [RUNNER_BIN, ...args], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  let peakTree = 0;
  let peakOwn = 0;
  const seen = new Map<number, string>();
  const timer = setInterval(() => {
    const s = sampleTree(child.pid!);
    peakTree = Math.max(peakTree, s.total);
    peakOwn = Math.max(peakOwn, s.own);
    for (const [pid, name] of s.pids) seen.set(pid, name);
  }, 25);
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  clearInterval(timer);
  if (code !== 0) throw new Error(`the run exited ${code}: ${stderr}`);
  const children = new Map<string, number>();
  for (const name of seen.values()) children.set(name, (children.get(name) ?? 0) + 1);
  return {
    wallMs: performance.now() - started,
    peakTreeMiB: peakTree / 1024,
    peakRunnerMiB: peakOwn / 1024,
    children,
    code,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const flag = (name: string, fallback: string): string =>
    argv.includes(name) ? argv[argv.indexOf(name) + 1]! : fallback;
  const rttMs = Number(flag("--rtt", "50"));
  const reps = Number(flag("--reps", "3"));
  const kubectl = flag("--kubectl", findDefaultKubectl());
  const work = mkdtempSync(join(tmpdir(), "api-transport-bench-"));
  const cluster = await startLocalCluster({ tls: true, maxGraceSeconds: 1 });
  const port = Number(new URL(cluster.url).port);
  const proxy = await startLatencyProxy({ host: "127.0.0.1", port }, rttMs);
  const kubeconfig = join(work, "kubeconfig");
  writeFileSync(
    kubeconfig,
    readFileSync(cluster.kubeconfigPath, "utf8").replace(`127.0.0.1:${port}`, `127.0.0.1:${proxy.port}`),
    { mode: 0o600 },
  );
  const example = join(REPO_ROOT, "examples", "hello");
  const results: Record<string, Sample[]> = { kubectl: [], api: [] };
  try {
    for (let rep = 0; rep < reps; rep++) {
      for (const transport of ["kubectl", "api"] as const) {
        const out = join(work, `out-${transport}-${rep}`);
        const checkout = join(work, `checkout-${transport}-${rep}`);
        cpSync(example, checkout, { recursive: true });
        const args = [
          "run",
          "--checkout",
          checkout,
          "--steps",
          join(checkout, "steps.tsv"),
          "--shared-steps",
          join(REPO_ROOT, "examples", "shared-steps"),
          "--out",
          out,
          "--kubeconfig",
          kubeconfig,
          "--kubectl",
          kubectl,
          "--transport",
          transport,
        ];
        const sample = await runOnce(args);
        results[transport]!.push(sample);
        console.error(
          `${transport} rep ${rep + 1}: ${(sample.wallMs / 1000).toFixed(2)} s, tree peak ${sample.peakTreeMiB.toFixed(0)} MiB, runner peak ${sample.peakRunnerMiB.toFixed(0)} MiB, children ${JSON.stringify(Object.fromEntries(sample.children))}`,
        );
      }
    }
  } finally {
    await proxy.close();
    await cluster.stop();
    rmSync(work, { recursive: true, force: true });
  }
  const k = results.kubectl!;
  const a = results.api!;
  const wallK = median(k.map((s) => s.wallMs));
  const wallA = median(a.map((s) => s.wallMs));
  console.log(
    `example run, API server ${rttMs} ms away (latency proxy), ${reps} alternating runs each, load ${loadavg()[0]!.toFixed(1)}:`,
  );
  console.log(
    `| transport | wall (median) | peak RSS, runner + children (median) | runner alone | child processes seen |`,
  );
  console.log(`| --- | --- | --- | --- | --- |`);
  for (const [name, samples] of [
    ["kubectl", k],
    ["api", a],
  ] as const) {
    console.log(
      `| ${name} | ${(median(samples.map((s) => s.wallMs)) / 1000).toFixed(2)} s | ${median(samples.map((s) => s.peakTreeMiB)).toFixed(0)} MiB | ${median(samples.map((s) => s.peakRunnerMiB)).toFixed(0)} MiB | ${JSON.stringify(Object.fromEntries(samples[0]!.children))} |`,
    );
  }
  console.log(`api / kubectl wall time: ${(wallA / wallK).toFixed(2)}x`);
}

await main();
