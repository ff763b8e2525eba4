// Measures the candidate API clients side by side: import cost, RSS after 50 requests, TLS connection reuse, exec backpressure.
//
// Usage: node dist/bench/transport-library-bench.js --client-node /tmp/knode/node_modules [--exec-mib 256]
// `--client-node` is a node_modules folder holding @kubernetes/client-node 1.4.x and undici 7.x (neither is a
// dependency of ours): `npm install --prefix /tmp/knode @kubernetes/client-node@1.4.0 undici@7.30.3`.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type Server } from "node:https";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";
import { WebSocketServer } from "ws";
import { makeServingCertificate } from "../local-cluster/tls.js";

interface ChildReport {
  readonly ms?: number;
  readonly rssMiB: number;
  readonly maxRssMiB: number;
  readonly bytes?: number;
  readonly exitStatus?: string;
}

const SELF = fileURLToPath(import.meta.url);
const MiB = 1024 * 1024;

/** One measurement in a fresh node process, so that its RSS is its own. */
async function runChild(mode: string, args: Record<string, unknown>): Promise<ChildReport> {
  const child = spawn(process.execPath, [SELF, "--child", mode, JSON.stringify(args)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  const [code] = (await once(child, "close")) as [number];
  if (code !== 0) throw new Error(`child ${mode} exited ${code}: ${out}`);
  return JSON.parse(out.trim().split("\n").at(-1)!) as ChildReport;
}

function memory(): { rssMiB: number; maxRssMiB: number } {
  return { rssMiB: process.memoryUsage().rss / MiB, maxRssMiB: process.resourceUsage().maxRSS / 1024 };
}

async function importModule(dir: string, name: string, main = join("dist", "index.js")): Promise<any> {
  return import(pathToFileURL(join(dir, name, main)).href);
}

/** Child side: does one thing and prints one JSON line. */
async function child(mode: string, args: any): Promise<void> {
  const started = performance.now();
  if (mode === "import-none") return print({ ms: 0, ...memory() });
  if (mode === "import-client-node") {
    const k8s = await importModule(args.dir, "@kubernetes/client-node");
    void [k8s.KubeConfig, k8s.CoreV1Api, k8s.Exec];
    return print({ ms: performance.now() - started, ...memory() });
  }
  if (mode === "import-undici") {
    const [undici, ws] = await Promise.all([importModule(args.dir, "undici", "index.js"), import("ws")]);
    void [undici.Agent, ws.WebSocket];
    return print({ ms: performance.now() - started, ...memory() });
  }
  if (mode === "import-own") {
    const [https, ws] = await Promise.all([import("node:https"), import("ws")]);
    void [https.Agent, ws.WebSocket];
    return print({ ms: performance.now() - started, ...memory() });
  }
  const kubeconfig = {
    clusters: [{ name: "c", server: args.url, caData: Buffer.from(args.ca).toString("base64") }],
    users: [{ name: "u", token: "bench" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  };
  if (mode === "reuse-client-node") {
    const k8s = await importModule(args.dir, "@kubernetes/client-node");
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions(kubeconfig);
    const api = kc.makeApiClient(k8s.CoreV1Api);
    const t = performance.now();
    for (let i = 0; i < args.calls; i++) await api.readNamespacedPod({ name: "p", namespace: "b" });
    return print({ ms: performance.now() - t, ...memory() });
  }
  if (mode === "reuse-own") {
    const https = await import("node:https");
    const agent = new https.Agent({ keepAlive: true, ca: args.ca });
    const t = performance.now();
    for (let i = 0; i < args.calls; i++) {
      await new Promise<void>((resolve, reject) => {
        const req = https.get(
          `${args.url}/api/v1/namespaces/b/pods/p`,
          { agent, headers: { authorization: "Bearer bench" } },
          (res) => {
            let text = "";
            res.on("data", (d: Buffer) => (text += d.toString()));
            res.on("end", () => (JSON.parse(text), resolve()));
          },
        );
        req.on("error", reject);
      });
    }
    agent.destroy();
    return print({ ms: performance.now() - t, ...memory() });
  }
  if (mode === "reuse-undici") {
    const { Agent, request } = await importModule(args.dir, "undici", "index.js");
    const agent = new Agent({ connect: { ca: args.ca }, keepAliveTimeout: 30_000 });
    const t = performance.now();
    for (let i = 0; i < args.calls; i++) {
      const res = await request(`${args.url}/api/v1/namespaces/b/pods/p`, {
        dispatcher: agent,
        headers: { authorization: "Bearer bench" },
      });
      await res.body.json();
    }
    await agent.close();
    return print({ ms: performance.now() - t, ...memory() });
  }
  // exec: a consumer that takes 32 MiB/s while the server can send far faster.
  let bytes = 0;
  const slow = new Writable({
    highWaterMark: 64 * 1024,
    write(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      setTimeout(done, (chunk.length / (32 * MiB)) * 1000);
    },
  });
  if (mode === "exec-client-node") {
    const k8s = await importModule(args.dir, "@kubernetes/client-node");
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions(kubeconfig);
    let exitStatus = "none";
    const finished = new Promise<void>((resolve) => {
      void new k8s.Exec(kc).exec("b", "p", "c", ["flood"], slow, null, null, false, (status: { status?: string }) => {
        exitStatus = status.status ?? "?";
        resolve();
      });
    });
    await finished;
    await new Promise<void>((resolve) => slow.end(resolve));
    return print({ ms: performance.now() - started, bytes, exitStatus, ...memory() });
  }
  if (mode === "exec-own") {
    const { WebSocket } = await import("ws");
    const url = `${args.url.replace(/^https/, "wss")}/api/v1/namespaces/b/pods/p/exec?command=flood&stdout=true`;
    const ws = new WebSocket(url, ["v5.channel.k8s.io"], {
      ca: args.ca,
      headers: { authorization: "Bearer bench" },
      perMessageDeflate: false,
    });
    let exitStatus = "none";
    ws.on("message", (data: Buffer) => {
      if (data[0] === 1 && !slow.write(data.subarray(1))) {
        ws.pause();
        slow.once("drain", () => ws.resume());
      } else if (data[0] === 3) exitStatus = JSON.parse(data.subarray(1).toString()).status;
    });
    await once(ws, "close");
    await new Promise<void>((resolve) => slow.end(resolve));
    return print({ ms: performance.now() - started, bytes, exitStatus, ...memory() });
  }
  throw new Error(`unknown mode ${mode}`);
}

function print(report: ChildReport): void {
  process.stdout.write(JSON.stringify(report) + "\n");
}

/** An https server that answers a pod GET and floods an exec's stdout, counting TLS connections. */
async function startServer(
  cert: { cert: string; key: string },
  execBytes: number,
): Promise<{ server: Server; url: string; connections: () => number }> {
  let connections = 0;
  const server = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ apiVersion: "v1", kind: "Pod", metadata: { name: "p", namespace: "b" } }));
  });
  server.on("secureConnection", () => connections++);
  const wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    handleProtocols: (p) => (p.has("v5.channel.k8s.io") ? "v5.channel.k8s.io" : false),
  });
  server.on("upgrade", (req, socket, head) => {
    wss.handleUpgrade(req, socket, head, (ws) => {
      const chunk = Buffer.alloc(MiB + 1, 0x61);
      chunk[0] = 1;
      let sent = 0;
      let inFlight = 0;
      const pump = (): void => {
        while (inFlight < 8 && sent < execBytes) {
          sent += MiB;
          inFlight++;
          ws.send(chunk, { binary: true }, () => {
            inFlight--;
            pump();
          });
        }
        if (sent >= execBytes && inFlight === 0) {
          ws.send(Buffer.concat([Buffer.from([3]), Buffer.from(JSON.stringify({ metadata: {}, status: "Success" }))]));
          ws.close(1000);
        }
      };
      pump();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as { port: number }).port;
  return { server, url: `https://127.0.0.1:${port}`, connections: () => connections };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === "--child") return child(argv[1]!, JSON.parse(argv[2]!));
  const dir = argv[argv.indexOf("--client-node") + 1];
  if (!argv.includes("--client-node") || !dir)
    throw new Error(
      "usage: transport-library-bench.js --client-node <node_modules with @kubernetes/client-node 1.4.x> [--exec-mib N]",
    );
  const execMiB = argv.includes("--exec-mib") ? Number(argv[argv.indexOf("--exec-mib") + 1]) : 256;
  const work = mkdtempSync(join(tmpdir(), "transport-bench-"));
  const cert = await makeServingCertificate(work, "127.0.0.1");
  rmSync(work, { recursive: true, force: true });
  const { server, url, connections } = await startServer(cert, execMiB * MiB);
  const lines: string[] = [];
  const say = (line: string): void => {
    lines.push(line);
    console.log(line);
  };
  try {
    for (const mode of ["import-none", "import-client-node", "import-undici", "import-own"]) {
      const runs = [];
      for (let i = 0; i < 5; i++) runs.push(await runChild(mode, { dir }));
      say(
        `${mode}: median import ${median(runs.map((r) => r.ms ?? 0)).toFixed(0)} ms, RSS after import ${median(runs.map((r) => r.rssMiB)).toFixed(0)} MiB (5 runs)`,
      );
    }
    for (const mode of ["reuse-client-node", "reuse-undici", "reuse-own"]) {
      const before = connections();
      const report = await runChild(mode, { dir, url, ca: cert.cert, calls: 20 });
      say(
        `${mode}: 20 sequential GETs over TLS in ${report.ms!.toFixed(0)} ms on ${connections() - before} TLS connection(s)`,
      );
      const many = await runChild(mode, { dir, url, ca: cert.cert, calls: 50 });
      say(`${mode}: peak RSS after 50 GETs ${many.maxRssMiB.toFixed(0)} MiB`);
    }
    for (const mode of ["exec-client-node", "exec-own"]) {
      const report = await runChild(mode, { dir, url, ca: cert.cert });
      say(
        `${mode}: ${(report.bytes! / MiB).toFixed(0)} MiB of stdout to a 32 MiB/s consumer in ${(report.ms! / 1000).toFixed(1)} s, peak RSS ${report.maxRssMiB.toFixed(0)} MiB, status ${report.exitStatus}`,
      );
    }
  } finally {
    server.close();
    server.closeAllConnections();
  }
}

await main();
