// A `serve` process for follower tests and benches: a scripted executor whose first step prints a big log once a "go" file appears in the state dir.
// Usage: node dist/test/support/big-log-service.js <stateDir> '<json: token, logBytes, stallTimeoutMs?, maxBufferedBytes?, maxTotalBufferedBytes?>'
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import type { StepOutcome } from "../../src/executor/executor.js";
import { startService, type ServeCommand } from "../../src/serve/start-service.js";
import { ScriptedExecutor } from "./scripted-executor.js";

interface Options {
  readonly token: string;
  readonly logBytes: number;
  readonly stallTimeoutMs?: number;
  readonly maxBufferedBytes?: number;
  readonly maxTotalBufferedBytes?: number;
}

async function main(): Promise<void> {
  const stateDir = process.argv[2]!;
  const options = JSON.parse(process.argv[3]!) as Options;
  mkdirSync(join(stateDir, "checkout"), { recursive: true });
  const line = `${"x".repeat(99)}\n`;
  const chunk = line.repeat(160);
  const followers = {
    ...(options.stallTimeoutMs !== undefined ? { stallTimeoutMs: options.stallTimeoutMs } : {}),
    ...(options.maxBufferedBytes !== undefined ? { maxBufferedBytes: options.maxBufferedBytes } : {}),
    ...(options.maxTotalBufferedBytes !== undefined ? { maxTotalBufferedBytes: options.maxTotalBufferedBytes } : {}),
  };
  const config = {
    listen: { host: "127.0.0.1", port: 0 },
    stateDir: join(stateDir, "state"),
    token: options.token,
    metricsWithoutToken: true,
    limits: { maxRuns: 2, maxQueued: 10, maxWorkflowBytes: 10_000, maxSecrets: 4, maxSecretBytes: 1000 },
    maxBodyBytes: 64 * 1024,
    keepRunsMs: 3_600_000,
    gcIntervalMs: 3_600_000,
    gcStaleAfterMs: 120_000,
    defaults: {
      target: { namespace: "ci" },
      podTimeoutMs: 1000,
      maxOutputBytes: 1 << 20,
      maxLogBytes: 256 << 20,
      checkoutRoot: join(stateDir, "checkout"),
    },
    transport: {
      setting: { target: { namespace: "ci" }, kubectlPath: "/nonexistent/kubectl", transport: "kubectl" },
      env: {},
    },
    followers,
  } as ServeCommand;
  const started = await startService(config, {
    warn: (message) => process.stderr.write(`${message}\n`),
    createExecutor: (ctx) =>
      new ScriptedExecutor(ctx, {
        runStep: async (index, _deadline, c) => {
          if (index !== 0) return { status: "success", exitCode: 0, timedOut: false } as StepOutcome;
          while (!existsSync(join(stateDir, "go"))) await new Promise((r) => setTimeout(r, 20));
          for (let sent = 0; sent < options.logBytes; sent += chunk.length) {
            c.emit({ kind: "step-output", index, stream: "stdout", text: chunk });
            await new Promise((r) => setImmediate(r));
          }
          return { status: "success", exitCode: 0, timedOut: false } as StepOutcome;
        },
      }),
  });
  process.stdout.write(`listening on ${started.url}\n`);
  process.on("SIGTERM", () => void started.stop(1000, AbortSignal.abort()).then(() => process.exit(0)));
}

void main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
