// Starts the runner service: state store, run service, metrics, HTTP server, and the gc and prune timers; stops it with a drain.
import type { AddressInfo } from "node:net";
import { formatDuration } from "../core/duration.js";
import { describeError } from "../core/errors.js";
import { DEFAULT_TIMINGS, type ExecutorContext, type ExecutorTimings } from "../executor/kubernetes/context.js";
import type { Executor } from "../executor/executor.js";
import { runGc } from "../ops/gc.js";
import { createBearerCheck, watchTokenFile } from "./bearer-auth.js";
import { createClusterCallRouter } from "./cluster-call-router.js";
import { createClusterClient, type ServeTransport } from "./cluster-transport.js";
import { DEFAULT_FOLLOWER_SETTINGS, FollowerBudget, type FollowerSettings } from "./follower-budget.js";
import { createServeServer } from "./http-server.js";
import { loadLexicons } from "./lexicon-schemas.js";
import type { ListenAddress } from "./listen-address.js";
import type { RunDefaults, SubmissionLimits } from "./prepare-submission.js";
import type { SchedulerLimits } from "./run-scheduler.js";
import { RunService, type AbandonedRun } from "./run-service.js";
import { RunStore } from "./run-store.js";
import { createServeMetrics } from "./serve-metrics.js";
import {
  acquireInstanceLease,
  fenceRuns,
  reclaimOwnRuns,
  startAdopting,
  type InstanceSettings,
} from "./serve-instance.js";

/** Everything `serve` runs with, resolved and checked at the CLI edge. */
export interface ServeCommand {
  readonly listen: ListenAddress;
  readonly stateDir: string;
  readonly token: string;
  /** Where `token` was read from: read again when it changes (a rotation needs no restart). */
  readonly tokenFile?: string;
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer };
  readonly metricsWithoutToken: boolean;
  readonly limits: SchedulerLimits & SubmissionLimits & { readonly maxQueued: number };
  /** Largest JSON request body taken (413 past it). */
  readonly maxBodyBytes: number;
  readonly keepRunsMs: number;
  readonly gcIntervalMs: number;
  /** A Job whose heartbeat is older is abandoned, for the gc timer. */
  readonly gcStaleAfterMs: number;
  readonly defaults: RunDefaults;
  readonly transport: ServeTransport;
  readonly timings?: Partial<ExecutorTimings>;
  /** The bounds on /logs and /events followers (DEFAULT_FOLLOWER_SETTINGS for what is not given). */
  readonly followers?: Partial<FollowerSettings>;
  /** This service among several in a namespace (its Lease, --adopt); absent: no Lease, no annotation, no adoption. */
  readonly instance?: InstanceSettings;
}

/** How long cancelled runs may take to end (their Jobs deleted) during a drain before they are abandoned. */
export const DEFAULT_DRAIN_CLEANUP_MS = 60_000;

export interface StartedService {
  /** `http://HOST:PORT` (or https), the port resolved when 0 was asked for. */
  readonly url: string;
  readonly service: RunService;
  /**
   * Drains (no new runs; pending ones cancelled; running ones given `drainTimeoutMs`, then cancelled, or at once
   * when `now` aborts; cancelled ones given `cleanupTimeoutMs` to end, then abandoned), then closes the server and
   * the store. Resolves with the runs it abandoned.
   */
  stop(drainTimeoutMs: number, now: AbortSignal, cleanupTimeoutMs?: number): Promise<AbandonedRun[]>;
}

export interface StartHooks {
  readonly warn: (message: string) => void;
  /** Tests script the executor; absent: the Kubernetes one. */
  readonly createExecutor?: (ctx: ExecutorContext) => Executor;
}

export async function startService(config: ServeCommand, hooks: StartHooks): Promise<StartedService> {
  // Opened first: a state that cannot be used (StateError, exit 4) stops the start before any cluster client exists.
  const calls = createClusterCallRouter();
  const store = new RunStore(config.stateDir);
  const [lexicons, cluster] = await Promise.all([
    loadLexicons(),
    createClusterClient(config.transport, calls.listeners),
  ]).catch((error: unknown) => {
    store.close();
    throw error;
  });
  // Held before any run is touched: while this instance's Lease is live, no adopter takes its runs.
  const lease = config.instance
    ? await acquireInstanceLease(config.instance, cluster, config.defaults.target, hooks.warn).catch(
        (error: unknown) => {
          store.close();
          throw error;
        },
      )
    : undefined;
  let service: RunService | undefined;
  const followers = new FollowerBudget({ ...DEFAULT_FOLLOWER_SETTINGS, ...config.followers });
  const metrics = await createServeMetrics({
    followers: () => followers.counts(),
    countByStatus: () => store.countByStatus(),
    queueLength: () => service?.queueLength ?? 0,
    runningCount: () => service?.runningCount ?? 0,
  });
  service = new RunService({
    stateDir: config.stateDir,
    store,
    defaults: config.defaults,
    limits: config.limits,
    cluster,
    withClusterCalls: calls.withClusterCalls,
    ...(config.timings ? { timings: config.timings } : {}),
    ...(hooks.createExecutor ? { createExecutor: hooks.createExecutor } : {}),
    observer: metrics.observer,
    warn: hooks.warn,
    ...(config.instance ? { instance: config.instance.name } : {}),
    ...(config.instance && lease ? { fence: fenceRuns(config.instance.name, lease, cluster, hooks.warn) } : {}),
  });
  const running = service;
  if (config.instance)
    await reclaimOwnRuns(store.listByStatus("running"), config.instance.name, cluster, running, hooks.warn);
  // The runs the previous process left running go on at once, before the server listens: their steps do not wait.
  const resumed = running.resumeRunning();
  if (resumed.length > 0) hooks.warn(`re-attaching to ${resumed.length} run(s) the previous process left running`);
  const adopter = config.instance?.adopt
    ? startAdopting(config.instance, cluster, config.defaults.target, running, hooks.warn)
    : undefined;
  const server = createServeServer({
    service: running,
    lexicons,
    checkToken: createBearerCheck(
      config.tokenFile === undefined ? config.token : watchTokenFile(config.tokenFile, config.token, hooks.warn),
    ),
    metrics,
    metricsWithoutToken: config.metricsWithoutToken,
    followers,
    maxBodyBytes: config.maxBodyBytes,
    ...(config.tls ? { tls: config.tls } : {}),
    warn: hooks.warn,
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.listen.port, config.listen.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const timers = [
    setInterval(
      () => {
        void running
          .prune(config.keepRunsMs)
          .catch((error: unknown) =>
            hooks.warn(`pruning runs older than ${formatDuration(config.keepRunsMs)}: ${describeError(error)}`),
          );
      },
      Math.min(config.keepRunsMs, 3_600_000),
    ),
    setInterval(() => {
      void (async () => {
        const report = await runGc(cluster, config.defaults.target, {
          policy: { staleAfterMs: config.gcStaleAfterMs },
          dryRun: false,
          deleteRetry: DEFAULT_TIMINGS.deleteRetry,
        });
        for (const outcome of report.outcomes)
          if (outcome.result === "failed") hooks.warn(`gc: Job ${outcome.job}: ${outcome.failure ?? outcome.reason}`);
      })().catch((error: unknown) => hooks.warn(`gc: ${describeError(error)}`));
    }, config.gcIntervalMs),
  ];
  for (const timer of timers) timer.unref();
  await running.prune(config.keepRunsMs);
  return {
    url: `${config.tls ? "https" : "http"}://${host}:${address.port}`,
    service: running,
    async stop(drainTimeoutMs, now, cleanupTimeoutMs = DEFAULT_DRAIN_CLEANUP_MS) {
      for (const timer of timers) clearInterval(timer);
      await adopter?.stop();
      const abandoned = await running.drain(drainTimeoutMs, now, cleanupTimeoutMs);
      // Released once no run of this instance is left: an adopter may take whatever the drain abandoned.
      await lease?.release();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      // An abandoned run may still write its status: the store stays open for the moments before the exit.
      if (abandoned.length === 0) store.close();
      return abandoned;
    },
  };
}
