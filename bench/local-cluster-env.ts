// The local cluster as the benchmarks use it: usability check, start, pod-phase watch, quiescing, leftovers and stop.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { checkContainersUsable, startLocalCluster, type LocalCluster } from "../local-cluster/index.js";

/** Async on purpose: the cluster serves from this process, so a synchronous kubectl or podman call would deadlock. */
const execFileAsync = promisify(execFile);

const SDK_BIN = "/usr/lib/google-cloud-sdk/bin";
const KUBECTL_MINORS = ["1.33", "1.32", "1.31", "1.30"];
const IMAGE = "docker.io/library/busybox:1.36";

/** The newest pinned kubectl of the SDK that exists here, else `kubectl` on PATH. */
export function findDefaultKubectl(): string {
  return KUBECTL_MINORS.map((v) => join(SDK_BIN, `kubectl.${v}`)).find(existsSync) ?? "kubectl";
}

/** Why the local-cluster benchmarks cannot run here (podman, image or kubectl missing), or undefined when they can. */
export async function checkLocalClusterUsable(kubectlPath: string): Promise<string | undefined> {
  const reason = await checkContainersUsable().catch((error: unknown) => `podman is not usable: ${String(error)}`);
  if (reason) return reason;
  try {
    await execFileAsync(kubectlPath, ["version", "--client", "-o", "json"], { timeout: 20_000 });
  } catch (error) {
    return `kubectl ${kubectlPath} cannot run: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`;
  }
  return undefined;
}

export interface ToolVersions {
  readonly kubectl: string;
  readonly podman: string;
  readonly runtime: string;
}

async function readFirstLine(command: string, args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await execFileAsync(command, [...args], { timeout: 20_000 });
    return stdout.split("\n")[0]?.trim() ?? "";
  } catch {
    return "unknown";
  }
}

/** kubectl's client version (gitVersion), podman's version and the OCI runtime podman uses. */
export async function readToolVersions(kubectlPath: string): Promise<ToolVersions> {
  const kubectlJson = await readFirstLine("sh", ["-c", '"$0" version --client -o json | tr -d "\\n "', kubectlPath]);
  const kubectl = /"gitVersion":"([^"]+)"/.exec(kubectlJson)?.[1] ?? kubectlJson;
  const podman = await readFirstLine("podman", ["version", "--format", "{{.Client.Version}}"]);
  const runtime = await readFirstLine("podman", [
    "info",
    "--format",
    "{{.Host.OCIRuntime.Name}} {{.Host.OCIRuntime.Version}}",
  ]);
  return { kubectl: `${kubectlPath} (${kubectl})`, podman: `podman ${podman}`, runtime };
}

/**
 * Records, from the API server's own store, the first moment each pod was seen Running (polled every `everyMs`):
 * the truth both the runner and the plain script discover through `get pods`.
 */
export class PodPhaseWatch {
  readonly #runningAt = new Map<string, number>();
  readonly #timer: NodeJS.Timeout;

  constructor(cluster: LocalCluster, everyMs = 10) {
    this.#timer = setInterval(() => {
      const now = Date.now();
      for (const pod of cluster.objects("pods")) {
        const status = pod.status as { phase?: string } | undefined;
        if (status?.phase === "Running" && !this.#runningAt.has(pod.metadata.name))
          this.#runningAt.set(pod.metadata.name, now);
      }
    }, everyMs);
  }

  /** Epoch ms the pod was first seen Running, if it was. */
  runningAt(pod: string): number | undefined {
    return this.#runningAt.get(pod);
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}

export interface BenchCluster {
  readonly cluster: LocalCluster;
  readonly kubectlPath: string;
  readonly watch: PodPhaseWatch;
  /** Waits (untimed) until no Job, pod or podman container of this cluster is left, so runs do not overlap. */
  quiesce(): Promise<void>;
}

async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

/** Starts the local cluster for the benchmarks; others' leftovers in podman are not touched (no orphan pruning). */
export async function startBenchCluster(
  kubectlPath: string,
  podVolumes: "disk" | "memory" = "disk",
  tls = false,
): Promise<BenchCluster> {
  const cluster = await startLocalCluster({ pruneOrphans: false, emptyDirsInMemory: podVolumes === "memory", tls });
  const watch = new PodPhaseWatch(cluster);
  const quiesce = async (): Promise<void> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const busy =
        cluster.objects("jobs.batch").length +
        cluster.objects("pods").length +
        (await cluster.podmanContainers()).length;
      if (busy === 0) return;
      if (Date.now() > deadline)
        throw new Error(`the local cluster did not quiesce within 60 s: ${busy} job(s)/pod(s)/container(s) left`);
      await sleep(100);
    }
  };
  return { cluster, kubectlPath, watch, quiesce };
}

export interface Leftovers {
  readonly containers: readonly string[];
  readonly volumes: readonly string[];
  readonly pods: readonly string[];
}

/** Stops the cluster, then lists what podman still holds of it (containers, pods, volumes carrying its id). */
export async function stopBenchCluster(bench: BenchCluster): Promise<Leftovers> {
  bench.watch.stop();
  const { cluster } = bench;
  await cluster.stop();
  return {
    containers: await cluster.podmanContainers(),
    pods: await cluster.podmanPods(),
    volumes: await cluster.podmanVolumes(),
  };
}

export const LOCAL_IMAGE = IMAGE;
