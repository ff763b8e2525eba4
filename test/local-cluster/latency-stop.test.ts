// A stopped local cluster holds no latency fault's wait open: the test process that stopped it exits at once.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { REPO_ROOT } from "../support/run-cli.js";

test("stop() ends a request held by a 300 s latency fault, so the process exits within seconds", async () => {
  const index = pathToFileURL(join(REPO_ROOT, "dist", "local-cluster", "index.js")).href;
  const script = `
    const { startLocalCluster } = await import(${JSON.stringify(index)});
    const cluster = await startLocalCluster({ runtime: "none" });
    cluster.setFaults({ latency: { ms: 300000, match: "^GET /api/v1/namespaces" } });
    fetch(cluster.url + "/api/v1/namespaces").catch(() => undefined);
    while (!cluster.faultFirings().some((f) => f.fault === "latency")) await new Promise((r) => setTimeout(r, 20));
    await cluster.stop();
    console.log("stopped");
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let stdout = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text));
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
  const stopped = Date.now();
  const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const code = await exited;
  clearTimeout(killer);
  assert.equal(stdout.trim(), "stopped");
  assert.equal(code, 0, "the process was killed 30 s after stop(): a latency wait held it");
  assert.ok(Date.now() - stopped < 10_000, `it exited ${Date.now() - stopped} ms after stop()`);
});
