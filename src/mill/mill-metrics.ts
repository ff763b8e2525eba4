// The executor's Prometheus metrics (prom-client, loaded when the executor starts) and the small HTTP server that answers /metrics.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { MillObserver, MillStats } from "./mill-session.js";

export interface MillMetrics {
  readonly observer: MillObserver;
  readonly contentType: string;
  render(): Promise<string>;
}

/** Gauges read `stats` when /metrics is asked for; counters hear the session through `observer`. */
export async function createMillMetrics(stats: () => MillStats | undefined): Promise<MillMetrics> {
  // prom-client loads when the executor starts: ~100 ms of CPU every other command would pay.
  const { Counter, Gauge, Registry, collectDefaultMetrics } = await import("prom-client");
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: "knotless_mill_seats_in_use",
    help: "Leases reserved or running (at most --max-runs)",
    registers: [registry],
    collect() {
      this.set(stats()?.seatsInUse ?? 0);
    },
  });
  new Gauge({
    name: "knotless_mill_seats",
    help: "Seats (--max-runs)",
    registers: [registry],
    collect() {
      this.set(stats()?.maxRuns ?? 0);
    },
  });
  new Gauge({
    name: "knotless_mill_leases",
    help: "Leases held, by state: reserved (seat held, not committed), running, finishing (log being stored)",
    labelNames: ["state"],
    registers: [registry],
    collect() {
      const leases = stats()?.leases;
      for (const state of ["reserved", "running", "finishing"] as const) this.set({ state }, leases?.[state] ?? 0);
    },
  });
  new Gauge({
    name: "knotless_mill_outbox_depth",
    help: "Status events and results queued and not yet acknowledged by the mill",
    registers: [registry],
    collect() {
      this.set(stats()?.outboxDepth ?? 0);
    },
  });
  new Gauge({
    name: "knotless_mill_outbox_bytes",
    help: "Bytes of status events and results not yet acknowledged (past 10 MiB, RUNNING statuses are dropped and reserves refused)",
    registers: [registry],
    collect() {
      this.set(stats()?.outboxBytes ?? 0);
    },
  });
  new Gauge({
    name: "knotless_mill_connected",
    help: "1 while a session with the mill is up",
    registers: [registry],
    collect() {
      this.set(stats()?.connected ? 1 : 0);
    },
  });
  const reconnects = new Counter({
    name: "knotless_mill_reconnects_total",
    help: "Sessions with the mill opened after the first",
    registers: [registry],
  });
  const terminals = new Counter({
    name: "knotless_mill_terminals_total",
    help: "Terminal results queued, by status",
    labelNames: ["status"],
    registers: [registry],
  });
  return {
    observer: { reconnected: () => reconnects.inc(), terminal: (status) => terminals.inc({ status }) },
    contentType: registry.contentType,
    render: () => registry.metrics(),
  };
}

/** Serves GET /metrics on host:port (no token: bind it to a private address); resolves once listening. */
export async function listenMetrics(
  metrics: MillMetrics,
  host: string,
  port: number,
): Promise<{ readonly url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found: GET /metrics\n");
      return;
    }
    metrics.render().then(
      (text) => res.writeHead(200, { "content-type": metrics.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${address.port}/metrics`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
