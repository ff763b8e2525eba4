import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { loadLexicons } from "../../src/serve/lexicon-schemas.js";
import { makeTestTempDir } from "../support/temp-dir.js";
import {
  openStalledNdjson,
  openStalledWs,
  startBigLogService,
  type StalledFollower,
} from "../support/stalled-followers.js";

const MiB = 1024 * 1024;

/** Polls `check` every 100 ms until it holds or `ms` pass; returns whether it held. */
async function waitFor(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 100)))
    if (await check()) return true;
  return check();
}

function sumOf(samples: Map<string, number>, prefix: string): number {
  let sum = 0;
  for (const [name, value] of samples) if (name.startsWith(prefix)) sum += value;
  return sum;
}

describe("log followers of a big run", { timeout: 180_000 }, () => {
  it("drops 60 NDJSON and 60 WebSocket followers that stop reading a 17 MB log after the stall timeout, within the per-follower and total bounds, the service staying under 300 MiB resident", async () => {
    const dir = makeTestTempDir("serve-followers-");
    const maxBufferedBytes = 256 * 1024;
    const maxTotalBufferedBytes = 16 * MiB;
    const service = await startBigLogService(dir, {
      logBytes: 17 * 1000 * 1000,
      stallTimeoutMs: 2000,
      maxBufferedBytes,
      maxTotalBufferedBytes,
    });
    try {
      await service.submit("big");
      const followers: Array<{ kind: "ndjson" | "ws"; follower: StalledFollower }> = [];
      for (let i = 0; i < 60; i++) {
        followers.push({ kind: "ndjson", follower: await openStalledNdjson(service.url, "/logs/big") });
        followers.push({ kind: "ws", follower: await openStalledWs(service.url, "/logs/big") });
      }
      service.go();
      let bufferedPeak = 0;
      const runEnded = await waitFor(async () => {
        const samples = await service.metrics();
        bufferedPeak = Math.max(bufferedPeak, samples.get("knotless_runner_follower_buffered_bytes") ?? 0);
        const res = await fetch(`${service.url}/xrpc/dev.knotless.runner.getRun?runId=big`, {
          headers: { Authorization: "Bearer t0ken-for-follower-tests" },
        });
        return ((await res.json()) as { status: string }).status === "success";
      }, 90_000);
      assert.ok(runEnded, "the run ends");
      const allDropped = await waitFor(async () => {
        const samples = await service.metrics();
        bufferedPeak = Math.max(bufferedPeak, samples.get("knotless_runner_follower_buffered_bytes") ?? 0);
        return sumOf(samples, "knotless_runner_followers_dropped_total") >= 120;
      }, 15_000);
      const peak = service.peakRss();
      assert.ok(peak < 300 * MiB, `peak resident memory ${(peak / MiB).toFixed(0)} MiB, over 300 MiB`);
      assert.ok(allDropped, "all 120 followers are dropped for stalling");
      assert.ok(
        bufferedPeak <= maxTotalBufferedBytes,
        `${bufferedPeak} bytes buffered for followers, over the total bound ${maxTotalBufferedBytes}`,
      );
      // Every connection ends (told why if it reads again within another stall timeout, else cut).
      await Promise.all(followers.map(({ follower }) => follower.resume()));
      // The service counts a follower gone on its side's close, which can come a moment after the client's end.
      let left = -1;
      await waitFor(
        async () => (left = sumOf(await service.metrics(), 'knotless_runner_followers{stream="logs"')) === 0,
        5_000,
      );
      assert.equal(left, 0, "no log follower is left counted");
    } finally {
      await service.stop();
    }
  });

  it("tells a follower dropped for stalling why (a last NDJSON line, a 4008 close frame) while a follower that reads gets the whole log", async () => {
    const dir = makeTestTempDir("serve-followers-");
    // Three times what loopback TCP took in for a stalled follower here (about 4 MiB: socket buffers autotuned): the
    // stalled ones still fill their own bound, and the reader has less to read.
    const service = await startBigLogService(dir, {
      logBytes: 12 * 1000 * 1000,
      stallTimeoutMs: 2000,
      maxBufferedBytes: 128 * 1024,
    });
    try {
      await service.submit("big");
      const ndjson = await openStalledNdjson(service.url, "/logs/big");
      const ws = await openStalledWs(service.url, "/logs/big");
      const reader = (async () => {
        const res = await fetch(`${service.url}/logs/big`, {
          headers: { Authorization: "Bearer t0ken-for-follower-tests", Accept: "application/x-ndjson" },
        });
        const hash = createHash("sha256");
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) hash.update(chunk);
        return hash.digest("hex");
      })();
      service.go();
      assert.ok(
        await waitFor(
          async () => sumOf(await service.metrics(), "knotless_runner_followers_dropped_total") >= 2,
          60_000,
        ),
        "both stalled followers are dropped",
      );
      const [fromNdjson, fromWs] = await Promise.all([ndjson.resume(), ws.resume()]);
      const last = JSON.parse(fromNdjson.lines.at(-1)!) as { error?: string; message?: string };
      assert.equal(last.error, "FollowerStalled");
      (await loadLexicons()).def("streamError", last);
      assert.match(last.message ?? "", /read nothing for 2(\.0)?s/);
      assert.equal(fromWs.code, 4008);
      assert.match(fromWs.reason ?? "", /^FollowerStalled: /);
      assert.equal(
        await reader,
        createHash("sha256")
          .update(readFileSync(join(dir, "state", "runs", "big", "log.ndjson")))
          .digest("hex"),
      );
    } finally {
      await service.stop();
    }
  });
});
