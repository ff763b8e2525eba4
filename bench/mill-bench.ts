// The mill executor's benchmark on the local cluster: CommitLease to the first LiveLog line, cold and with warm capacity, and 20 leases at once through one executor process (all succeed, its peak memory).
// Run: npm run build && node dist/bench/mill-bench.js   (prints markdown; needs podman and the local busybox image)
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startLocalCluster } from "../local-cluster/index.js";
import { TERMINAL_STATUS } from "../src/mill/mill-messages.js";
import { StandInMill } from "../test/support/stand-in-mill.js";
import { findDefaultKubectl } from "./local-cluster-env.js";

const TOKEN = "bench-mill-token-of-the-mill";
const BUSYBOX = "docker.io/library/busybox:1.36";
const PIPELINE = JSON.stringify({
  triggerMetadata: {
    kind: "push",
    repo: { knot: "knot.example.org", did: "did:plc:abc", repo: "core", defaultBranch: "main" },
    push: { ref: "refs/heads/main", oldSha: "0".repeat(40), newSha: "a".repeat(40) },
  },
});

function offer(leaseId: string) {
  const raw = `engine: microvm\nimage: alpine\nsteps:\n  - name: hello\n    command: "echo hello from $TANGLED_REPO_NAME"\n`;
  return {
    leaseId,
    targetEngine: "microvm",
    rawPipelineJson: PIPELINE,
    rawWorkflowJson: JSON.stringify({ name: "ci.yml", engine: "microvm", clone: { skip: true }, raw }),
    knot: "knot.example.org",
    rkey: "3kxbench",
  };
}

/** The process's peak resident set (VmHWM), in MiB. */
function readPeakMiB(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) / 1024 : NaN;
}

async function startConnected(
  mill: StandInMill,
  args: readonly string[],
): Promise<{ child: ChildProcess; exited: Promise<number | null> }> {
  const connections = mill.connections;
  const started = await startExecutor(args);
  await mill.waitFor(() => mill.connections > connections && mill.connected, 60_000, "the executor's session");
  return started;
}

function startExecutor(args: readonly string[]): Promise<{ child: ChildProcess; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [join(process.cwd(), "bin", "knotless-runner-k8s.js"), "executor", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  let output = "";
  child.stderr!.setEncoding("utf8").on("data", (text: string) => (output += text));
  return new Promise((resolve, reject) => {
    child.stdout!.setEncoding("utf8").on("data", (text: string) => {
      output += text;
      if (/dialling/.test(output)) resolve({ child, exited });
    });
    void exited.then((code) => reject(new Error(`executor exited ${code}: ${output}`)));
  });
}

/** Milliseconds from CommitLease to the lease's first LiveLog line, and to its terminal. */
async function timeLease(
  mill: StandInMill,
  leaseId: string,
): Promise<{ firstLineMs: number; firstStepMs: number; terminalMs: number; status: number }> {
  const reserved = await mill.reserve(offer(leaseId));
  if (!reserved.accepted) throw new Error(`${leaseId} rejected: ${reserved.rejectReason}`);
  const sent = Date.now();
  await mill.commit(leaseId);
  const first = await mill.waitFor(
    () => mill.received.find((entry) => entry.message.kind === "liveLog" && entry.message.body.leaseId === leaseId),
    600_000,
    `${leaseId}'s first line`,
  );
  const step = await mill.waitFor(
    () =>
      mill.received.find(
        (entry) =>
          entry.message.kind === "liveLog" &&
          entry.message.body.leaseId === leaseId &&
          /"step_id":0/.test(Buffer.from(entry.message.body.rawJson).toString()),
      ),
    600_000,
    `${leaseId}'s first step line`,
  );
  const terminal = await mill.waitFor(() => mill.terminals.get(leaseId), 600_000, `${leaseId}'s terminal`);
  return {
    firstLineMs: first.at - sent,
    firstStepMs: step.at - sent,
    terminalMs: Date.now() - sent,
    status: terminal.status,
  };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "mill-bench-"));
  const tokenFile = join(dir, "token");
  writeFileSync(tokenFile, `${TOKEN}\n`);
  chmodSync(tokenFile, 0o600);
  const configFile = join(dir, "config.yml");
  writeFileSync(
    configFile,
    ["engines:", "  microvm:", "    images:", `      alpine: ${BUSYBOX}`, "    defaultImage: alpine", ""].join("\n"),
  );
  const cluster = await startLocalCluster({ imageBackOffSeconds: 1 });
  const mill = await StandInMill.start({ token: TOKEN });
  const base = (stateDir: string) => [
    "--mill",
    mill.url,
    "--insecure-mill",
    "--token-file",
    tokenFile,
    "--state-dir",
    join(dir, stateDir),
    "--log-store",
    join(dir, "store"),
    "--max-runs",
    "20",
    "--config",
    configFile,
    "--kubeconfig",
    cluster.kubeconfigPath,
    "--kubectl",
    findDefaultKubectl(),
  ];
  const lines: string[] = ["## Mill executor on the local cluster", ""];
  let executor: { child: ChildProcess; exited: Promise<number | null> } | undefined;
  try {
    // Cold: no placeholder to claim, every lease creates its Job and waits for its pod.
    executor = await startConnected(mill, [...base("cold"), "--skip-warm"]);
    const cold = [];
    for (let i = 0; i < 3; i++) cold.push(await timeLease(mill, `cold-${i}`));
    executor.child.kill("SIGTERM");
    await executor.exited;
    // Warm: each run leaves a placeholder pod that keeps its node; the next lease claims it.
    executor = await startConnected(mill, [...base("warm"), "--keep-warm", "120s", "--max-warm", "1"]);
    await timeLease(mill, "warm-seed");
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const warm = [];
    for (let i = 0; i < 3; i++) {
      warm.push(await timeLease(mill, `warm-${i}`));
      await new Promise((resolve) => setTimeout(resolve, 5_000));
    }
    executor.child.kill("SIGTERM");
    await executor.exited;
    // 20 at once through one process.
    executor = await startConnected(mill, [...base("many"), "--skip-warm"]);
    const started = Date.now();
    const many = await Promise.all(
      Array.from({ length: 20 }, (_, i) => timeLease(mill, `many-${String(i).padStart(2, "0")}`)),
    );
    const wallMs = Date.now() - started;
    const peak = readPeakMiB(executor.child.pid!);
    executor.child.kill("SIGTERM");
    await executor.exited;
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const row = (name: string, runs: Array<{ firstLineMs: number; firstStepMs: number; terminalMs: number }>) =>
      `| ${name} | ${median(runs.map((r) => r.firstLineMs))} | ${median(runs.map((r) => r.firstStepMs))} | ${median(runs.map((r) => r.terminalMs))} | ${runs.length} |`;
    lines.push(
      "| case | CommitLease → first LiveLog (median, ms) | → the first step's first line (median, ms) | → terminal (median, ms) | runs |",
      "|---|---|---|---|---|",
    );
    lines.push(row("cold", cold), row("warm capacity", warm), row("20 at once", many), "");
    const succeeded = many.filter((r) => r.status === TERMINAL_STATUS.success).length;
    lines.push(
      `20 leases at once: ${succeeded}/20 succeeded in ${(wallMs / 1000).toFixed(1)} s; the executor's peak memory (VmHWM) ${peak.toFixed(0)} MiB (bound: 200 MiB).`,
    );
    lines.push(`Stand-in mill violations: ${mill.violations.length === 0 ? "none" : mill.violations.join("; ")}.`);
  } finally {
    if (executor && executor.child.exitCode === null) {
      executor.child.kill("SIGTERM");
      await executor.exited;
    }
    await mill.close();
    await cluster.stop();
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

await main();
