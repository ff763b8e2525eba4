// Many runs of the example at once in ONE node process through the library (runWorkflow, one API-transport Cluster): peak RSS of that process and its children, and marginal memory per run.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { startLocalCluster } from "../local-cluster/index.js";
import { sampleTree } from "./process-tree.js";
import { REPO_ROOT } from "./runner-cli.js";

const CHILD = join(REPO_ROOT, "dist", "bench", "library-runs-child.js");
const MiB = 1024;

export interface LibraryRunsMeasurement {
  readonly runs: number;
  readonly succeeded: number;
  readonly failures: readonly string[];
  /** The driver with its cluster open and modules loaded, before any run (KiB). */
  readonly idleKiB: number;
  /** Peak of the driver alone and of it with every descendant (KiB), sampled every 100 ms. */
  readonly peakOwnKiB: number;
  readonly peakTreeKiB: number;
  readonly peakChildren: number;
  readonly childNames: ReadonlyMap<string, number>;
  readonly wallMs: number;
  readonly loadAtEnd: number;
}

/** One driver process running `runs` runs at once against the cluster of `kubeconfig`. */
async function measureRuns(runs: number, kubeconfig: string, scratch: string): Promise<LibraryRunsMeasurement> {
  const work = mkdtempSync(join(scratch, `library-${runs}-`));
  const child = spawn(process.execPath, [CHILD, kubeconfig, work, String(runs)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  try {
    const ready = await lines.next();
    if (ready.done || !JSON.parse(ready.value).ready) throw new Error("the driver process did not get ready");
    const idleKiB = sampleTree(child.pid!).own;
    let peakOwnKiB = idleKiB;
    let peakTreeKiB = idleKiB;
    let peakChildren = 0;
    const seen = new Map<number, string>();
    const timer = setInterval(() => {
      const sample = sampleTree(child.pid!);
      peakOwnKiB = Math.max(peakOwnKiB, sample.own);
      peakTreeKiB = Math.max(peakTreeKiB, sample.total);
      peakChildren = Math.max(peakChildren, sample.pids.size);
      for (const [pid, name] of sample.pids) seen.set(pid, name);
    }, 100);
    child.stdin!.end("go\n");
    const done = await lines.next();
    clearInterval(timer);
    const [code] = (await once(child, "close")) as [number | null];
    if (done.done || code !== 0) throw new Error(`the driver process exited ${code}`);
    const { statuses, wallMs } = JSON.parse(done.value) as { statuses: string[]; wallMs: number };
    const childNames = new Map<string, number>();
    for (const name of seen.values()) childNames.set(name, (childNames.get(name) ?? 0) + 1);
    const failures = statuses.filter((status) => status !== "success");
    return {
      runs,
      succeeded: statuses.length - failures.length,
      failures,
      idleKiB,
      peakOwnKiB,
      peakTreeKiB,
      peakChildren,
      childNames,
      wallMs,
      loadAtEnd: loadavg()[0]!,
    };
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
    rmSync(work, { recursive: true, force: true });
  }
}

/** Each count in turn on one local cluster (podman pods); one row per count. */
export async function runLibraryConcurrencyBench(
  counts: readonly number[],
  scratch: string,
  log: (line: string) => void,
): Promise<LibraryRunsMeasurement[]> {
  const cluster = await startLocalCluster({});
  const results: LibraryRunsMeasurement[] = [];
  try {
    for (const runs of counts) {
      log(`library: ${runs} runs of the example at once in one process (load ${loadavg()[0]!.toFixed(1)})`);
      const result = await measureRuns(runs, cluster.kubeconfigPath, scratch);
      log(
        `library: ${runs} runs: ${result.succeeded} succeeded, peak ${(result.peakTreeKiB / MiB).toFixed(1)} MiB with children, ${(result.wallMs / 1000).toFixed(1)} s`,
      );
      results.push(result);
    }
  } finally {
    await cluster.stop();
  }
  return results;
}

/** The report's section: a row per count and the marginal memory per run between the smallest and largest count. */
export function renderLibraryReport(results: readonly LibraryRunsMeasurement[], argv: readonly string[]): string {
  const mib = (kib: number): string => `${(kib / MiB).toFixed(1)} MiB`;
  const rows = results.map(
    (r) =>
      `| ${r.runs} | ${r.succeeded}/${r.runs}${r.failures.length ? ` (${[...new Set(r.failures)].slice(0, 3).join("; ")})` : ""} | ${mib(r.idleKiB)} | ${mib(r.peakOwnKiB)} | ${mib(r.peakTreeKiB)} (at most ${r.peakChildren} children: ${[...r.childNames].map(([name, n]) => `${name} ×${n}`).join(", ") || "none"}) | ${(r.wallMs / 1000).toFixed(1)} s | ${r.loadAtEnd.toFixed(1)} |`,
  );
  const sorted = [...results].sort((a, b) => a.runs - b.runs);
  const low = sorted[0];
  const high = sorted.at(-1);
  const marginal =
    low && high && high.runs > low.runs
      ? `marginal memory per run (${low.runs} → ${high.runs}): ${((high.peakTreeKiB - low.peakTreeKiB) / MiB / (high.runs - low.runs)).toFixed(2)} MiB\n`
      : "";
  return [
    "## Concurrent runs through the library (one process, API transport)",
    "",
    `\`npm run bench -- ${argv.join(" ")}\`; the example (examples/hello, 4 steps) on the local cluster (podman pods), every run at once`,
    "",
    "| runs at once | succeeded | driver idle | driver peak | peak with children | wall | load at end |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
    "",
    marginal,
  ].join("\n");
}
