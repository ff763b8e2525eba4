// The background process `cli up` starts: runs one local cluster until SIGTERM, recording where it listens in <dir>/state.json.

import { readFile, rm, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { formatStatePath, type DaemonState } from "./daemon-state.js";
import { startLocalCluster } from "./index.js";
import { parseJoinHold } from "./node-pool.js";

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      dir: { type: "string" },
      port: { type: "string", default: "0" },
      "admin-port": { type: "string", default: "0" },
      faults: { type: "string" },
      runtime: { type: "string", default: "podman" },
      "instance-id": { type: "string" },
      "log-requests": { type: "boolean", default: false },
      tls: { type: "boolean", default: false },
      "scale-from-zero": { type: "string" },
      "node-cpu": { type: "string" },
      "node-memory": { type: "string" },
    },
  });
  if (!values.dir) throw new Error("--dir is required");
  const faults = values.faults ? JSON.parse(await readFile(values.faults, "utf8")) : undefined;
  const cluster = await startLocalCluster({
    dir: values.dir,
    port: Number(values.port),
    adminPort: Number(values["admin-port"]),
    faults,
    runtime: values.runtime === "none" ? "none" : "podman",
    instanceId: values["instance-id"],
    logRequests: values["log-requests"],
    tls: values.tls,
    ...(values["scale-from-zero"]
      ? {
          scaleFromZero: {
            ...parseJoinHold(values["scale-from-zero"]),
            ...(values["node-cpu"] ? { nodeCpu: values["node-cpu"] } : {}),
            ...(values["node-memory"] ? { nodeMemory: values["node-memory"] } : {}),
          },
        }
      : {}),
  });
  const state: DaemonState = {
    pid: process.pid,
    url: cluster.url,
    adminUrl: cluster.adminUrl,
    instanceId: cluster.instanceId,
    kubeconfigPath: cluster.kubeconfigPath,
    startedAt: new Date().toISOString(),
  };
  await writeFile(formatStatePath(values.dir), JSON.stringify(state, null, 2) + "\n");
  console.error(
    `local-cluster: serving ${cluster.url} (admin ${cluster.adminUrl}), kubeconfig ${cluster.kubeconfigPath}`,
  );
  const shutdown = async (signal: string): Promise<void> => {
    console.error(`local-cluster: ${signal}: removing pods and stopping`);
    await cluster.stop();
    await rm(formatStatePath(values.dir!), { force: true });
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

main().catch((e) => {
  console.error(`local-cluster: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
