// The API transport's cost of sending stdin: 1 GiB through openExecSocket into a server that discards it (its own
// process), over ws:// and wss://; the sender's CPU (process.cpuUsage) and wall time, fresh 64 KiB chunks as a
// child's stdout gives them. Usage: node dist/bench/exec-send-bench.js [--gib N] [--reps N]
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { makeServingCertificate } from "../local-cluster/tls.js";
import { openExecSocket } from "../src/cluster/api/exec-socket.js";

const args = process.argv.slice(2);
const flag = (name: string, fallback: number): number => {
  const at = args.indexOf(name);
  return at === -1 ? fallback : Number(args[at + 1]);
};
const GIB = flag("--gib", 1);
const REPS = flag("--reps", 3);
const CHUNK = 64 * 1024;

async function startSink(tls?: { cert: string; key: string }): Promise<{ port: number; stop: () => void }> {
  const script = fileURLToPath(new URL("./exec-sink-server.js", import.meta.url));
  const child = spawn(process.execPath, [script, ...(tls ? [tls.cert, tls.key] : [])], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [line] = (await once(child.stdout, "data")) as [Buffer];
  return { port: Number(line.toString().trim()), stop: () => child.kill() };
}

function gibOfChunks(gib: number): Readable {
  let left = gib * 2 ** 30;
  return new Readable({
    highWaterMark: 1024 * 1024,
    read() {
      if (left <= 0) return void this.push(null);
      left -= CHUNK;
      this.push(Buffer.allocUnsafe(CHUNK).fill(left & 0xff)); // a fresh buffer per read, as node reads a pipe
    },
  });
}

async function sendOnce(
  url: string,
  ca: string | undefined,
): Promise<{ wallMs: number; cpuMs: number; received: number }> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const socket = await openExecSocket(
    { url, headers: {}, tls: { rejectUnauthorized: true, ...(ca ? { ca } : {}) } },
    { stdin: gibOfChunks(GIB) },
  );
  let said = "";
  socket.stdout.on("data", (chunk: Buffer) => (said += chunk.toString()));
  socket.stderr.resume();
  const end = await socket.ended;
  if (end.kind !== "exit" || end.code !== 0) throw new Error(`the exec ended ${JSON.stringify(end)}`);
  const used = process.cpuUsage(cpu);
  return {
    wallMs: performance.now() - started,
    cpuMs: (used.user + used.system) / 1000,
    received: Number(said.trim()),
  };
}

const dir = await mkdtemp(join(tmpdir(), "exec-send-bench-"));
try {
  const cert = await makeServingCertificate(dir, "127.0.0.1");
  const certPaths = { cert: join(dir, "cert.pem"), key: join(dir, "key.pem") };
  await writeFile(certPaths.cert, cert.cert);
  await writeFile(certPaths.key, cert.key);
  const plain = await startSink();
  const secure = await startSink(certPaths);
  const ca = cert.cert;
  const path = "/api/v1/namespaces/ci/pods/p/exec?command=cat&stdin=true";
  console.log(`${GIB} GiB of stdin in ${CHUNK / 1024} KiB chunks, ${REPS} alternating repetitions`);
  for (let rep = 1; rep <= REPS; rep++) {
    for (const [name, url] of [
      ["ws://", `ws://127.0.0.1:${plain.port}${path}`],
      ["wss://", `wss://127.0.0.1:${secure.port}${path}`],
    ] as const) {
      const result = await sendOnce(url, name === "wss://" ? ca : undefined);
      if (result.received !== GIB * 2 ** 30) throw new Error(`${name}: the server got ${result.received} bytes`);
      console.log(
        `rep ${rep} ${name.padEnd(6)} wall ${result.wallMs.toFixed(0).padStart(5)} ms, sender CPU ${result.cpuMs.toFixed(0).padStart(5)} ms per ${GIB} GiB`,
      );
    }
  }
  plain.stop();
  secure.stop();
} finally {
  await rm(dir, { recursive: true, force: true });
}
