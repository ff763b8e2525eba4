// The service's metrics as Prometheus text: what each run's events and results add.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { RunEvent } from "../../src/events/run-events.js";
import { createServeMetrics } from "../../src/serve/serve-metrics.js";
import { parsePrometheusText } from "../support/serve-client.js";

const SOURCE = { countByStatus: () => new Map(), queueLength: () => 0, runningCount: () => 0 };
const time = "2026-01-01T00:00:00.000Z";

describe("serve's metrics", () => {
  it("count the upload's bytes under direction upload, beside the caches', from each run's phase and cache events", async () => {
    const metrics = await createServeMetrics(SOURCE);
    const sink = metrics.observer.runSink("r1");
    const events: RunEvent[] = [
      { time, kind: "phase-end", phase: "upload", ok: true, durationMs: 5, detail: "uploaded", bytes: 10_240 },
      { time, kind: "phase-end", phase: "upload", ok: true, durationMs: 5, detail: "uploaded", bytes: 2_048 },
      { time, kind: "phase-end", phase: "upload", ok: false, durationMs: 5, detail: "cut" },
      { time, kind: "phase-end", phase: "download", ok: true, durationMs: 5, detail: "nothing" },
      { time, kind: "cache-save", key: "k", status: "saved", bytes: 300, durationMs: 1 },
    ];
    for (const event of events) sink(event);
    const samples = parsePrometheusText(await metrics.render());
    assert.equal(samples.get('knotless_runner_bytes_moved_total{direction="upload"}'), 12_288);
    assert.equal(samples.get('knotless_runner_bytes_moved_total{direction="cache-save"}'), 300);
    assert.equal(samples.get('knotless_runner_phase_duration_seconds_count{phase="upload",ok="true"}'), 2);
  });
});
