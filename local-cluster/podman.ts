// The only module that spawns podman: kube play, state listing, exec, kill and removal of the cluster's pods.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

/** One container as `podman ps -a --format json` reports it. */
export interface PodmanContainer {
  id: string;
  name: string;
  podName: string;
  isInfra: boolean;
  state: string;
  exitCode: number;
  exited: boolean;
  startedAt: number;
  exitedAt: number;
  labels: Record<string, string>;
}

export interface PodmanResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface PodmanClientOptions {
  /** The podman binary (default "podman"). */
  binary?: string;
}

/** Runs podman to completion, collecting its output; never throws on a non-zero exit. */
function runPodman(binary: string, args: readonly string[], input?: string): Promise<PodmanResult> {
  return new Promise((resolve) => {
    const child = spawn(binary, args, { stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d: Buffer) => err.push(d));
    child.on("error", (e) => resolve({ code: 127, stdout: "", stderr: String(e) }));
    child.on("close", (code) =>
      resolve({ code: code ?? 1, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }),
    );
    // podman may exit without reading its stdin (most commands never do): that EPIPE is not the command's
    // outcome, its exit code is. Unheard, it would be an uncaught exception in the process hosting the cluster.
    child.stdin.on("error", () => undefined);
    child.stdin.end(input ?? "");
  });
}

function describeFailure(what: string, r: PodmanResult): Error {
  return new Error(`${what} failed (exit ${r.code}): ${r.stderr.trim() || r.stdout.trim()}`);
}

export class PodmanClient {
  readonly binary: string;

  constructor(options: PodmanClientOptions = {}) {
    this.binary = options.binary ?? "podman";
  }

  run(args: readonly string[], input?: string): Promise<PodmanResult> {
    return runPodman(this.binary, args, input);
  }

  /** Starts a pod from Kubernetes Pod YAML. */
  async playKube(yaml: string): Promise<void> {
    const dir = await mkdtemp(join(tmpdir(), "local-cluster-play-"));
    try {
      const file = join(dir, "pod.yaml");
      await writeFile(file, yaml);
      const r = await this.run(["kube", "play", "--quiet", file]);
      if (r.code !== 0) throw describeFailure("podman kube play", r);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async imageExists(image: string): Promise<boolean> {
    return (await this.run(["image", "exists", image])).code === 0;
  }

  /** Containers (infra included) carrying the label `key=value`. */
  async listContainers(label: string): Promise<PodmanContainer[]> {
    const r = await this.run(["ps", "-a", "--format", "json", "--filter", `label=${label}`]);
    if (r.code !== 0) throw describeFailure("podman ps", r);
    const raw = JSON.parse(r.stdout || "[]") as any[];
    return raw.map((c) => ({
      id: String(c.Id),
      name: String((c.Names ?? [])[0] ?? ""),
      podName: String(c.PodName ?? ""),
      isInfra: !!c.IsInfra,
      state: String(c.State),
      exitCode: Number(c.ExitCode ?? 0),
      exited: !!c.Exited,
      startedAt: Number(c.StartedAt ?? 0),
      exitedAt: Number(c.ExitedAt ?? 0),
      labels: (c.Labels ?? {}) as Record<string, string>,
    }));
  }

  /** Names of pods carrying the label `key=value`. */
  async listPods(label: string): Promise<string[]> {
    const r = await this.run(["pod", "ps", "--format", "{{.Name}}", "--filter", `label=${label}`]);
    if (r.code !== 0) throw describeFailure("podman pod ps", r);
    return r.stdout
      .split("\n")
      .map((s) => s.trim())
      .filter((s) => s.length > 0);
  }

  /** Pods carrying a label key (any value), with all their labels. */
  async listLabelledPods(labelKey: string): Promise<{ name: string; labels: Record<string, string> }[]> {
    const r = await this.run(["pod", "ps", "--format", "json", "--filter", `label=${labelKey}`]);
    if (r.code !== 0) throw describeFailure("podman pod ps", r);
    return (JSON.parse(r.stdout || "[]") as any[]).map((p) => ({
      name: String(p.Name),
      labels: (p.Labels ?? {}) as Record<string, string>,
    }));
  }

  async podExists(name: string): Promise<boolean> {
    return (await this.run(["pod", "exists", name])).code === 0;
  }

  /**
   * Stops (SIGTERM, then SIGKILL after `graceSeconds`) and removes a pod; a pod already gone is not an error.
   * podman sometimes fails when a container exits while it is being killed, so it retries with no grace period.
   */
  async removePod(name: string, graceSeconds: number): Promise<void> {
    let last: PodmanResult | undefined;
    for (let attempt = 0; attempt < 4; attempt++) {
      const grace = attempt === 0 ? Math.max(0, Math.floor(graceSeconds)) : 0;
      last = await this.run(["pod", "rm", "-f", "-t", String(grace), name]);
      if (last.code === 0 || /no pod with name or ID|no such pod/i.test(last.stderr)) return;
      if (!(await this.podExists(name))) return;
      await new Promise((r) => setTimeout(r, 200 * (attempt + 1)));
    }
    throw describeFailure(`podman pod rm ${name}`, last!);
  }

  /** Creates tmpfs volumes (mode 1777, as an emptyDir), which kube play then mounts by name. */
  async createMemoryVolumes(names: readonly string[]): Promise<void> {
    for (const name of names) {
      const r = await this.run([
        "volume",
        "create",
        "--opt",
        "type=tmpfs",
        "--opt",
        "device=tmpfs",
        "--opt",
        "o=mode=1777",
        name,
      ]);
      if (r.code !== 0) throw describeFailure("podman volume create", r);
    }
  }

  /** Removes named volumes; volumes already gone are not an error. */
  async removeVolumes(names: readonly string[]): Promise<void> {
    if (names.length === 0) return;
    const r = await this.run(["volume", "rm", "-f", ...names]);
    if (r.code !== 0 && !/no such volume|no volume with name/i.test(r.stderr))
      throw describeFailure("podman volume rm", r);
  }

  /** Names of volumes starting with `prefix`. */
  async listVolumes(prefix: string): Promise<string[]> {
    const r = await this.run(["volume", "ls", "--format", "{{.Name}}"]);
    if (r.code !== 0) throw describeFailure("podman volume ls", r);
    return r.stdout
      .split("\n")
      .map((s) => s.trim())
      .filter((s) => s.startsWith(prefix));
  }

  /** SIGKILLs every container of a pod, leaving it in place (exit codes stay readable). */
  async killPod(name: string): Promise<void> {
    await this.run(["pod", "kill", "--signal", "KILL", name]);
  }

  /** `podman exec [-i] CONTAINER CMD...` with piped stdio; the caller owns the child. */
  spawnExec(container: string, command: readonly string[], stdin: boolean): ChildProcess {
    return spawn(this.binary, ["exec", ...(stdin ? ["-i"] : []), container, ...command], {
      stdio: ["pipe", "pipe", "pipe"],
    });
  }

  /** `podman logs` of one container; the caller owns the child. */
  spawnLogs(container: string, follow: boolean, tail?: number): ChildProcess {
    const args = [
      "logs",
      ...(follow ? ["-f"] : []),
      ...(tail !== undefined ? ["--tail", String(tail)] : []),
      container,
    ];
    return spawn(this.binary, args, { stdio: ["ignore", "pipe", "pipe"] });
  }

  /**
   * Follows `podman events` for containers with a label and calls `onEvent` for each; restarts the stream if it
   * ends, then calls `onRestart` (events may have been missed meanwhile). Returns a function that stops following.
   */
  watchEvents(
    label: string,
    onEvent: (status: string, containerName: string) => void,
    onRestart: () => void = () => undefined,
  ): () => void {
    let stopped = false;
    let child: ChildProcess | undefined;
    let started = false;
    const start = (): void => {
      if (stopped) return;
      if (started) onRestart();
      started = true;
      child = spawn(this.binary, ["events", "--format", "json", "--filter", `label=${label}`], {
        stdio: ["ignore", "pipe", "ignore"],
      });
      const lines = createInterface({ input: child.stdout! });
      lines.on("line", (line) => {
        try {
          const e = JSON.parse(line) as { Status?: string; Name?: string };
          onEvent(String(e.Status ?? ""), String(e.Name ?? ""));
        } catch {
          // not an event line: ignore
        }
      });
      child.on("error", () => undefined);
      child.on("close", () => {
        if (!stopped) setTimeout(start, 1000).unref();
      });
    };
    start();
    return () => {
      stopped = true;
      child?.kill("SIGTERM");
    };
  }

  /** Whether podman can run a container here: undefined when it can, otherwise the reason. */
  async checkUsable(image = "docker.io/library/busybox:1.36"): Promise<string | undefined> {
    const version = await this.run(["version", "--format", "{{.Client.Version}}"]);
    if (version.code !== 0) return `podman is not usable: ${version.stderr.trim() || "not installed"}`;
    if (!(await this.imageExists(image))) return `image ${image} is missing: run scripts/setup-containers.sh`;
    const r = await this.run(["run", "--rm", "--network", "none", image, "true"]);
    if (r.code !== 0) return `podman cannot run a container: ${r.stderr.trim()}`;
    return undefined;
  }
}
