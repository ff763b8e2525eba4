// Peak resident memory of `serve` while stalled followers (NDJSON and WebSocket clients that read nothing) follow a run printing a big log, with the service's default follower bounds.
// Usage: npm run build && node dist/bench/followers-bench.js [--followers 60] [--log-mb 17] [--stall-ms 30000]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  openStalledNdjson,
  openStalledWs,
  startBigLogService,
  type StalledFollower,
} from "../test/support/stalled-followers.js";

const MiB = 1024 * 1024;

async function main(): Promise<void> {
  const arg = (name: string, fallback: string): string => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1]! : fallback;
  };
  const followers = Number(arg("--followers", "60"));
  const logBytes = Number(arg("--log-mb", "17")) * 1000 * 1000;
  const stallTimeoutMs = Number(arg("--stall-ms", "30000"));
  const dir = mkdtempSync(join(tmpdir(), "followers-bench-"));
  const service = await startBigLogService(dir, { logBytes, stallTimeoutMs });
  const started = Date.now();
  try {
    const idle = service.peakRss();
    await service.submit("big");
    const open: StalledFollower[] = [];
    for (let i = 0; i < followers; i++)
      open.push(await openStalledNdjson(service.url, "/logs/big"), await openStalledWs(service.url, "/logs/big"));
    service.go();
    let bufferedPeak = 0;
    let dropped = 0;
    // Until every follower is dropped, or the stall timeout's worth twice over after the run's end.
    for (let endBy = Infinity; Date.now() < endBy; await new Promise((r) => setTimeout(r, 250))) {
      const samples = await service.metrics();
      bufferedPeak = Math.max(bufferedPeak, samples.get("knotless_runner_follower_buffered_bytes") ?? 0);
      dropped = [...samples]
        .filter(([name]) => name.startsWith("knotless_runner_followers_dropped_total"))
        .reduce((sum, [, n]) => sum + n, 0);
      if (dropped >= 2 * followers) break;
      if (endBy === Infinity && samples.get('knotless_runner_runs{status="success"}') === 1)
        endBy = Date.now() + 2 * stallTimeoutMs + 5000;
    }
    const peak = service.peakRss();
    await Promise.all(open.map((follower) => follower.resume()));
    process.stdout.write(
      `${followers} stalled NDJSON + ${followers} stalled WebSocket followers, a ${(logBytes / 1e6).toFixed(0)} MB log, stall timeout ${stallTimeoutMs} ms: ` +
        `peak RSS ${(peak / MiB).toFixed(0)} MiB (idle ${(idle / MiB).toFixed(0)} MiB), most bytes buffered for followers ${(bufferedPeak / MiB).toFixed(1)} MiB, ${dropped} dropped, ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
    );
  } finally {
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

void main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
