// `npm run cluster -- up|down|status|faults`: runs the local cluster in the background and drives its faults.

import { spawn } from "node:child_process";
import { openSync } from "node:fs";
import { mkdir, readFile, rm } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { formatStatePath, type DaemonState } from "./daemon-state.js";
import { INSTANCE_LABEL } from "./kubelet.js";
import { parseJoinHold } from "./node-pool.js";
import { PodmanClient } from "./podman.js";
import { pruneOrphanedPods } from "./prune.js";

const USAGE = `usage: npm run cluster -- <command> [options]
  up      [--port 16443] [--admin-port 16444] [--dir D] [--faults FILE] [--runtime podman|none] [--tls] [--log-requests]
          [--scale-from-zero JOIN:HOLD [--node-cpu 2] [--node-memory 4Gi]]
          start the cluster in the background; writes D/kubeconfig, D/state.json, D/server.log;
          --scale-from-zero: no node until a pod needs one, Ready JOIN s after the scale-up, gone HOLD s after the last demand
  down    [--dir D]                 stop it and remove every pod and container it made
  status  [--dir D]                 show whether it runs, where, and its jobs, pods and containers
  faults  [FILE | - | --clear] [--dir D]
          replace the faults with FILE (JSON; - reads stdin), clear them, or (no argument) show them
  prune                             remove podman pods left by local clusters whose process died
D defaults to .local-cluster/ in the repository root.`;

const here = dirname(fileURLToPath(import.meta.url));
const DEFAULT_DIR = resolve(here, "..", "..", ".local-cluster");

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function readState(dir: string): Promise<DaemonState | undefined> {
  try {
    return JSON.parse(await readFile(formatStatePath(dir), "utf8")) as DaemonState;
  } catch {
    return undefined;
  }
}

async function answers(url: string): Promise<boolean> {
  try {
    const r = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
    return r.ok;
  } catch {
    return false;
  }
}

async function up(dir: string, v: Record<string, string | boolean | undefined>): Promise<number> {
  const existing = await readState(dir);
  if (existing && isAlive(existing.pid)) {
    console.log(
      `local cluster already running (pid ${existing.pid}) at ${existing.url}\nexport KUBECONFIG=${existing.kubeconfigPath}`,
    );
    return 0;
  }
  await mkdir(dir, { recursive: true });
  await rm(formatStatePath(dir), { force: true });
  const log = openSync(join(dir, "server.log"), "a");
  const args = [
    join(here, "daemon.js"),
    "--dir",
    dir,
    "--port",
    String(v.port ?? "16443"),
    "--admin-port",
    String(v["admin-port"] ?? "16444"),
  ];
  if (v.faults) args.push("--faults", resolve(String(v.faults)));
  if (v.runtime) args.push("--runtime", String(v.runtime));
  if (v["log-requests"]) args.push("--log-requests");
  if (v.tls) args.push("--tls");
  if (v["scale-from-zero"]) {
    parseJoinHold(String(v["scale-from-zero"])); // refused here, not in the background process
    args.push("--scale-from-zero", String(v["scale-from-zero"]));
    if (v["node-cpu"]) args.push("--node-cpu", String(v["node-cpu"]));
    if (v["node-memory"]) args.push("--node-memory", String(v["node-memory"]));
  }
  const child = spawn(process.execPath, args, { detached: true, stdio: ["ignore", log, log] });
  child.unref();
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const state = await readState(dir);
    if (state && (await answers(state.adminUrl))) {
      console.log(
        `local cluster up (pid ${state.pid}) at ${state.url}, admin ${state.adminUrl}\nexport KUBECONFIG=${state.kubeconfigPath}`,
      );
      return 0;
    }
    if (child.exitCode !== null || !isAlive(child.pid!)) break;
    await sleep(200);
  }
  console.error(`local cluster did not come up; see ${join(dir, "server.log")}`);
  return 1;
}

async function down(dir: string): Promise<number> {
  const state = await readState(dir);
  if (state && isAlive(state.pid)) {
    process.kill(state.pid, "SIGTERM");
    const deadline = Date.now() + 30_000;
    while (isAlive(state.pid) && Date.now() < deadline) await sleep(200);
    if (isAlive(state.pid)) process.kill(state.pid, "SIGKILL");
  }
  if (state) {
    const podman = new PodmanClient();
    const leftovers = await podman.listPods(`${INSTANCE_LABEL}=${state.instanceId}`).catch(() => []);
    for (const p of leftovers) await podman.removePod(p, 0);
    await podman.removeVolumes(await podman.listVolumes(`lc-${state.instanceId}-`).catch(() => []));
    await rm(formatStatePath(dir), { force: true });
    console.log(`local cluster stopped${leftovers.length ? `; removed ${leftovers.length} leftover pod(s)` : ""}`);
  } else console.log("local cluster is not running");
  return 0;
}

async function status(dir: string): Promise<number> {
  const state = await readState(dir);
  if (!state || !isAlive(state.pid)) {
    console.log("local cluster is not running");
    return 3;
  }
  console.log(
    `running (pid ${state.pid}) at ${state.url}, admin ${state.adminUrl}\nkubeconfig ${state.kubeconfigPath}`,
  );
  const r = await fetch(`${state.adminUrl}/_state`).catch(() => undefined);
  if (r?.ok) console.log(JSON.stringify(await r.json(), null, 2));
  return 0;
}

async function faults(dir: string, arg: string | undefined, clear: boolean): Promise<number> {
  const state = await readState(dir);
  if (!state) {
    console.error("local cluster is not running");
    return 1;
  }
  let init: RequestInit = { method: "GET" };
  if (clear) init = { method: "DELETE" };
  else if (arg) {
    const text = arg === "-" ? await readStdin() : await readFile(arg, "utf8");
    init = { method: "PUT", body: text, headers: { "Content-Type": "application/json" } };
  }
  const r = await fetch(`${state.adminUrl}/_faults`, init);
  const text = await r.text();
  (r.ok ? console.log : console.error)(text);
  return r.ok ? 0 : 1;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      dir: { type: "string" },
      port: { type: "string" },
      "admin-port": { type: "string" },
      faults: { type: "string" },
      runtime: { type: "string" },
      clear: { type: "boolean", default: false },
      "log-requests": { type: "boolean", default: false },
      tls: { type: "boolean", default: false },
      "scale-from-zero": { type: "string" },
      "node-cpu": { type: "string" },
      "node-memory": { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  const dir = resolve(values.dir ?? DEFAULT_DIR);
  const [command, arg] = positionals;
  if (values.help || !command) {
    console.log(USAGE);
    return command || values.help ? 0 : 2;
  }
  switch (command) {
    case "up":
      return up(dir, values);
    case "down":
      return down(dir);
    case "status":
      return status(dir);
    case "faults":
      return faults(dir, arg, values.clear);
    case "prune": {
      const removed = await pruneOrphanedPods(new PodmanClient());
      console.log(removed.length ? `removed ${removed.join(", ")}` : "nothing to prune");
      return 0;
    }
    default:
      console.error(USAGE);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    console.error(`local-cluster: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  },
);
