// The executor's /metrics: every gauge read from the session's counts when asked, the counters from what the session tells, over HTTP.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createMillMetrics, listenMetrics } from "../../src/mill/mill-metrics.js";
import type { MillStats } from "../../src/mill/mill-session.js";

describe("mill metrics", () => {
  it("serves seats, leases by state, the outbox's depth and bytes, the connection, reconnects and terminals by status", async () => {
    let stats: MillStats = {
      seatsInUse: 3,
      maxRuns: 4,
      leases: { reserved: 1, running: 2, finishing: 1 },
      outboxDepth: 5,
      outboxBytes: 1234,
      connected: true,
    };
    const metrics = await createMillMetrics(() => stats);
    metrics.observer.reconnected();
    metrics.observer.terminal("success");
    metrics.observer.terminal("success");
    metrics.observer.terminal("cancelled");
    const server = await listenMetrics(metrics, "127.0.0.1", 0);
    try {
      const res = await fetch(server.url);
      assert.equal(res.status, 200);
      const text = await res.text();
      for (const line of [
        "knotless_mill_seats_in_use 3",
        "knotless_mill_seats 4",
        'knotless_mill_leases{state="reserved"} 1',
        'knotless_mill_leases{state="running"} 2',
        'knotless_mill_leases{state="finishing"} 1',
        "knotless_mill_outbox_depth 5",
        "knotless_mill_outbox_bytes 1234",
        "knotless_mill_connected 1",
        "knotless_mill_reconnects_total 1",
        'knotless_mill_terminals_total{status="success"} 2',
        'knotless_mill_terminals_total{status="cancelled"} 1',
      ])
        assert.ok(text.split("\n").includes(line), `missing ${line}`);
      stats = { ...stats, connected: false, outboxDepth: 0 };
      const again = await (await fetch(server.url)).text();
      assert.ok(again.split("\n").includes("knotless_mill_connected 0"));
      assert.ok(again.split("\n").includes("knotless_mill_outbox_depth 0"));
      assert.equal((await fetch(server.url.replace("/metrics", "/other"))).status, 404);
    } finally {
      await server.close();
    }
  });
});
