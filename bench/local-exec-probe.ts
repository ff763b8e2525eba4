// One exec of `tar -c /outputs` through each Cluster (api, kubectl), stdout discarded or extracted: the transport alone.
//
// Usage: node dist/bench/local-exec-probe.js [--mib 256] [--files 12500] [--reps 2] [--kubectl PATH] [--cpu-prof-dir DIR]
// Starts the local cluster in this process, keeps one runner run's pod whose /outputs holds a copy of a generated
// checkout, then times each download in a child process (so the relay here does not share its thread), alternating;
// with --cpu-prof-dir each child writes a V8 CPU profile into DIR/<transport>-<mode>-<rep>/.
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startLocalCluster } from "../local-cluster/index.js";
import { openCluster } from "../src/cluster/transports/open-cluster.js";
import { extractOutputs } from "../src/transfer/extract-outputs.js";
import { ensureCheckout } from "./checkout-tree.js";
import { findDefaultKubectl } from "./local-cluster-env.js";
import { RUNNER_BIN } from "./runner-cli.js";

const MIB = 1024 * 1024;
const MODES = ["discard", "extract"] as const;

function readFlag(argv: readonly string[], name: string, fallback: string): string {
  const at = argv.indexOf(name);
  return at >= 0 && argv[at + 1] !== undefined ? (argv[at + 1] as string) : fallback;
}

/** The child: one download of /outputs from POD, printed as one JSON line. */
async function downloadOnce(
  kubeconfig: string,
  kubectlPath: string,
  pod: string,
  transport: "api" | "kubectl",
  mode: string,
  dest: string,
): Promise<void> {
  const { cluster } = await openCluster(
    { target: { kubeconfig, namespace: "default" }, kubectlPath, transport },
    process.env,
  );
  const started = performance.now();
  const exec = await cluster.exec({
    namespace: "default",
    pod,
    container: "run",
    command: ["tar", "-cf", "-", "-C", "/outputs", "."],
    stdin: { kind: "none" },
    reuseBuffers: true,
  });
  let bytes = 0;
  if (mode === "discard") {
    for await (const chunk of exec.stdout as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      exec.giveBack?.(chunk);
    }
  } else {
    bytes = (
      await extractOutputs(
        exec.stdout,
        dest,
        { maxBytes: 8 * 1024 * MIB, maxEntries: 100_000 },
        exec.giveBack ? { releaseChunk: exec.giveBack } : {},
      )
    ).bytes;
  }
  const end = await exec.ended;
  await rm(dest, { recursive: true, force: true });
  process.stdout.write(
    `${JSON.stringify({ transport, mode, ms: Math.round(performance.now() - started), bytes, end: end.kind, rssMiB: Math.round(process.memoryUsage().rss / MIB) })}\n`,
  );
}

function runChild(args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${args.slice(0, 2).join(" ")} exited ${code}`)),
    );
  });
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const kubectlPath = readFlag(argv, "--kubectl", findDefaultKubectl());
  if (argv[0] === "--child") {
    const [, kubeconfig, pod, transport, mode, dest] = argv as [
      string,
      string,
      string,
      "api" | "kubectl",
      string,
      string,
    ];
    return downloadOnce(kubeconfig, kubectlPath, pod, transport, mode, dest);
  }
  const mib = Number(readFlag(argv, "--mib", "256"));
  const files = Number(readFlag(argv, "--files", "12500"));
  const reps = Number(readFlag(argv, "--reps", "2"));
  const profileDir = readFlag(argv, "--cpu-prof-dir", "");
  const work = await mkdtemp("/dev/shm/local-exec-probe-");
  const cluster = await startLocalCluster({ pruneOrphans: false });
  try {
    const checkout = await ensureCheckout(work, { bytes: mib * MIB, files });
    await writeFile(join(work, "steps.tsv"), "copy\tcp -a /work/. /outputs/\n");
    const out = join(work, "out");
    await runChild([
      RUNNER_BIN,
      "run",
      "--checkout",
      checkout.dir,
      "--steps",
      join(work, "steps.tsv"),
      "--out",
      out,
      "--transport",
      "api",
      "--kubeconfig",
      cluster.kubeconfigPath,
      "--keep",
      "--max-output-bytes",
      String(2 * mib * MIB),
      "--timeout",
      "20m",
    ]);
    const pod = (JSON.parse(await readFile(join(out, "result.json"), "utf8")) as { job: { pod: string } }).job.pod;
    await rm(out, { recursive: true, force: true });
    const self = fileURLToPath(import.meta.url);
    for (let rep = 0; rep < reps; rep++) {
      for (const mode of MODES) {
        for (const transport of rep % 2 === 0 ? ["api", "kubectl"] : ["kubectl", "api"]) {
          const profile = profileDir
            ? ["--cpu-prof", `--cpu-prof-dir=${join(profileDir, `${transport}-${mode}-${rep}`)}`]
            : [];
          process.stdout.write(
            await runChild([
              ...profile,
              self,
              "--child",
              cluster.kubeconfigPath,
              pod,
              transport,
              mode,
              join(work, "dest"),
              "--kubectl",
              kubectlPath,
            ]),
          );
        }
      }
    }
  } finally {
    await cluster.stop();
    await rm(work, { recursive: true, force: true });
  }
}

await main();
